#!/usr/bin/env bash
# Installs a Debian package of continuum-node with apt into a new, bare Debian 12 root (debootstrap minbase: no
# Swift, none of the build's libraries) and uses it there: --version, init, post, feed, and a node whose web UI
# answers. Needs root and Debian's archive over the network, so scripts/test.sh does not run it (it runs
# scripts/package-test.sh, which needs neither); run it by hand before shipping a package:
#
#   sudo scripts/package-install-test.sh .build/package/continuum-node_0.3.0_amd64.deb
#
# Services stay stopped in the root (policy-rc.d): avahi-daemon, recommended by the package, is installed, never
# started. Everything it made is removed at the end.
set -euo pipefail
deb="$(readlink -f "${1:?usage: scripts/package-install-test.sh DEB}")"
fixture="$(cd "$(dirname "$0")/.." && pwd)/Tests/Fixtures/lake.png"
[ "$(id -u)" -eq 0 ] || { echo "package-install-test: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
root="$(mktemp -d /tmp/continuum-install-XXXXXX)"
port=$((20000 + RANDOM % 20000))
cleanup() {
    pkill -INT -f "continuum-node run --no-discovery --port 0 --api-listen 127.0.0.1:$port" 2>/dev/null || true
    sleep 1
    umount "$root/proc" 2>/dev/null || true
    rm -rf "$root"
}
trap cleanup EXIT
fail() {
    echo "package-install-test: $*" >&2
    exit 1
}

debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
cp "$deb" "$fixture" "$root/tmp/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

in_root sh -c "DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/$(basename "$deb")" >/dev/null
in_root sh -c 'command -v swift' && fail "swift is in the new root"
in_root dpkg -s avahi-daemon >/dev/null || fail "avahi-daemon (recommended) was not installed"
version="$(in_root continuum-node --version)"
echo "package-install-test: installed; continuum-node --version: $version"
in_root continuum-node init --name Installed >/dev/null
in_root continuum-node post /tmp/lake.png --caption "Installed by apt" >/dev/null 2>&1
in_root continuum-node feed | grep -q "Installed by apt" || fail "feed does not show the post"
in_root continuum-node run --no-discovery --port 0 --api-listen "127.0.0.1:$port" >"$root/tmp/run.out" 2>&1 &
for _ in $(seq 1 100); do
    grep -q '^api on ' "$root/tmp/run.out" 2>/dev/null && break
    sleep 0.1
done
curl -sS --fail "http://127.0.0.1:$port/" | grep -q '<title>Continuum</title>' || fail "no web UI on :$port"
curl -sS --fail "http://127.0.0.1:$port/api/status" | grep -q '"name":"Installed"' || fail "no API on :$port"
echo "package-install-test: apt installed $(basename "$deb") with its dependencies in a bare Debian 12; init," \
    "post, feed and a node with its web UI work there"
