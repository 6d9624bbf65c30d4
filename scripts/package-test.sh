#!/usr/bin/env bash
# Checks a Debian package of continuum-node as a machine without Swift would see it: extracted into a temporary
# root, never installed on this machine.
#
#   scripts/package-test.sh DEB
#
# - It holds the binary, the systemd user unit, the man page and the bash, zsh and fish completions; its control
#   file depends on the Debian libraries the binary needs and recommends avahi-daemon.
# - `ldd` of the binary lists no Swift runtime library, and nothing not found.
# - With no Swift toolchain on PATH, and the build folder out of reach, the extracted binary prints --version and
#   does a whole init / post / feed / search / show, then runs a node whose web UI comes from the package's own
#   resource bundle (changed here, so that the build folder's copy cannot pass for it).
set -euo pipefail
deb="${1:?usage: scripts/package-test.sh DEB}"
deb="$(readlink -f "$deb")"
cd "$(dirname "$0")/.."
repo="$(pwd)"
work="$(mktemp -d)"
node_pid=""
cleanup() {
    if [ -n "$node_pid" ] && kill -0 "$node_pid" 2>/dev/null; then
        kill -INT "$node_pid"
        wait "$node_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "package-test: $*" >&2
    exit 1
}

# What the package holds.
listing="$(dpkg-deb -c "$deb" | awk '{print $6}')"
for path in ./usr/bin/continuum-node ./usr/lib/continuum-node/continuum-node \
    ./usr/lib/continuum-node/continuum-node_ContinuumHTTP.resources/Web/index.html \
    ./usr/lib/systemd/user/continuum-node.service ./usr/share/man/man1/continuum-node.1.gz \
    ./usr/share/bash-completion/completions/continuum-node ./usr/share/zsh/vendor-completions/_continuum-node \
    ./usr/share/fish/vendor_completions.d/continuum-node.fish; do
    grep -qxF "$path" <<<"$listing" || fail "the package lacks $path"
done
depends="$(dpkg-deb -f "$deb" Depends)"
for library in libavahi-client3 libsqlite3-0 libvips42 libgexiv2-2 libgeonames0 libc6; do
    grep -qE "(^|, )$library(,|$| )" <<<"$depends" || fail "Depends lacks $library: $depends"
done
grep -qE 'libswift|swiftlang' <<<"$depends" && fail "Depends names a Swift package: $depends"
[ "$(dpkg-deb -f "$deb" Recommends)" = "avahi-daemon" ] || fail "avahi-daemon is not recommended"
version="$(dpkg-deb -f "$deb" Version)"
[[ "$(basename "$deb")" == "continuum-node_${version}_$(dpkg --print-architecture).deb" ]] ||
    fail "the file name $(basename "$deb") does not say version $version"

root="$work/root"
dpkg-deb -x "$deb" "$root"
binary="$root/usr/lib/continuum-node/continuum-node"
[ "$(readlink "$root/usr/bin/continuum-node")" = "../lib/continuum-node/continuum-node" ] ||
    fail "/usr/bin/continuum-node does not link to /usr/lib/continuum-node/continuum-node"

# No Swift runtime: every library the binary loads is Debian's.
libraries="$(ldd "$binary")"
if grep -qE 'libswift|libFoundation|libdispatch|libBlocksRuntime|/opt/swift' <<<"$libraries"; then
    fail "the binary loads the Swift runtime: $(grep -E 'libswift|libFoundation|libdispatch|/opt/swift' <<<"$libraries")"
fi
grep -q "not found" <<<"$libraries" && fail "libraries not found: $(grep 'not found' <<<"$libraries")"

# The unit starts the packaged binary and is enabled for the user's session.
unit="$root/usr/lib/systemd/user/continuum-node.service"
grep -qx 'ExecStart=/usr/bin/continuum-node run' "$unit" || fail "the unit does not run /usr/bin/continuum-node"
grep -qx 'WantedBy=default.target' "$unit" || fail "the unit cannot be enabled (WantedBy)"
if command -v systemd-analyze >/dev/null; then
    sed "s|/usr/bin/continuum-node|$root/usr/bin/continuum-node|" "$unit" >"$work/continuum-node.service"
    systemd-analyze verify --man=no "$work/continuum-node.service" || fail "systemd-analyze verify refused the unit"
fi

# The man page is the commands' help: every command, and the options added this round.
manual="$(gzip -dc "$root/usr/share/man/man1/continuum-node.1.gz")"
grep -qx '\.Dt CONTINUUM-NODE 1' <<<"$manual" || fail "the man page has no title (.Dt CONTINUUM-NODE 1)"
for word in "init" "post" "group" "approve" "api-tls" "version"; do
    grep -q -- "$word" <<<"$manual" || fail "the man page does not mention $word"
done
for section in ENVIRONMENT FILES EXAMPLES AUTHORS; do
    grep -qx "\.Sh $section" <<<"$manual" || fail "the man page has no $section section"
done
# Every document the man page names is in the package, and it names nothing by its place in the source tree.
grep -q 'Docs/CLI.md' <<<"$manual" && fail "the man page points to Docs/CLI.md, a file of the source tree"
for document in $(grep -oE '\b(README|CLI|API|WEB|PROTOCOL)\.md\b' <<<"$manual" | sort -u); do
    grep -qxF "./usr/share/doc/continuum-node/$document.gz" <<<"$listing" ||
        fail "the man page names $document, which the package does not ship"
done
maintainer="$(dpkg-deb -f "$deb" Maintainer)"
[[ "$maintainer" =~ ^[^\<]+\ \<[^@\>]+@[^\>]+\>$ ]] || fail "Maintainer is not a name and an address: '$maintainer'"
grep -qi 'continuum-node\.invalid' <<<"$maintainer" && fail "Maintainer is the old made-up address: '$maintainer'"
[ -z "$(dpkg-deb -f "$deb" Homepage)" ] || fail "the package names a Homepage: there is none"
grep -q 'GeoNames' "$root/usr/share/doc/continuum-node/copyright" 2>/dev/null ||
    dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/continuum-node/copyright | grep -q 'GeoNames' ||
    fail "the copyright file does not credit GeoNames"
bash -n "$root/usr/share/bash-completion/completions/continuum-node" || fail "the bash completion does not parse"
grep -q 'approve' "$root/usr/share/bash-completion/completions/continuum-node" || fail "bash completion lacks approve"
grep -q '#compdef continuum-node' "$root/usr/share/zsh/vendor-completions/_continuum-node" || fail "zsh completion"
grep -q "complete -c 'continuum-node'" "$root/usr/share/fish/vendor_completions.d/continuum-node.fish" ||
    fail "fish completion"

# As on a machine without Swift: a PATH with no toolchain, and the build folder out of reach (renamed for the
# duration would disturb other work; instead the web UI file is changed in the package's copy and looked for).
clean_path="/usr/sbin:/usr/bin:/sbin:/bin"
if PATH="$clean_path" command -v swift >/dev/null; then fail "swift is on $clean_path; cannot test without it"; fi
marker="package-test-$$-$RANDOM"
index="$root/usr/lib/continuum-node/continuum-node_ContinuumHTTP.resources/Web/index.html"
printf '<!-- %s -->\n' "$marker" >>"$index"
cn() { env -i PATH="$clean_path" HOME="$work/home" CONTINUUM_DATA="$work/data" "$root/usr/bin/continuum-node" "$@"; }
mkdir -p "$work/home"

printed="$(cn --version)"
[[ "$printed" == "$version (protocol "*")" ]] || fail "--version printed '$printed', not '$version (protocol N)'"
cn init --name Packaged >/dev/null
post="$(cn post "$repo/Tests/Fixtures/lake.png" --caption "From the package" 2>/dev/null)"
[[ "$post" =~ ^[0-9a-f]{64}$ ]] || fail "post printed '$post'"
cn feed | grep -q "From the package" || fail "feed does not show the post"
cn search "package from" | grep -q "From the package" || fail "search does not find the post"
cn show "${post:0:8}" | grep -q "Packaged" || fail "show does not name the author"

# A node: the web UI served from the package's resource bundle.
env -i PATH="$clean_path" HOME="$work/home" CONTINUUM_DATA="$work/data" "$root/usr/bin/continuum-node" run \
    --port 0 --no-discovery --api-listen 127.0.0.1:0 >"$work/run.out" 2>"$work/run.err" &
node_pid=$!
for _ in $(seq 1 100); do
    grep -q '^api on ' "$work/run.out" 2>/dev/null && break
    kill -0 "$node_pid" 2>/dev/null || fail "the node stopped: $(cat "$work/run.err")"
    sleep 0.1
done
api="$(grep -o '^api on http://[^ ]*' "$work/run.out" | head -1 | cut -d' ' -f3)"
[ -n "$api" ] || fail "the node printed no API address: $(cat "$work/run.out" "$work/run.err")"
curl -sS --fail "$api" | grep -q "$marker" || fail "the web UI is not the package's own"
curl -sS --fail "${api}api/status" | grep -q '"name":"Packaged"' || fail "the API does not answer as the node"
kill -INT "$node_pid"
wait "$node_pid" || fail "the node did not stop cleanly on SIGINT"
node_pid=""
echo "package-test: $(basename "$deb") holds the binary, unit, man page and completions; no Swift runtime; it ran" \
    "--version, init, post, feed, search, show and a node with its web UI from the package"
