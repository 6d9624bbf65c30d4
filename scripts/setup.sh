#!/usr/bin/env bash
# Installs what continuum-node needs on Debian 12 (with Swift already installed), and nothing that is
# already there. Safe to run again. Needs root or sudo only when something is missing.
set -euo pipefail

# System packages the build and the tests need, from Debian's archive.
packages=(libsqlite3-dev pkg-config)
# LAN discovery (libavahi-client) and its end-to-end test in network namespaces (scripts/netns-e2e.sh; its fake
# service, scripts/netns-fake-service.py, uses python3-dbus).
# policy-rc.d keeps avahi-daemon from starting on install; --no-install-recommends keeps libnss-mdns out.
packages+=(libavahi-client-dev avahi-daemon avahi-utils dbus iproute2 python3-dbus)
# Photos: full-decode checks, EXIF and thumbnails through libvips (ContinuumMedia; a runtime-only machine needs just
# libvips42). libvips-tools (the `vips` command) is only for regenerating the test photos:
# scripts/make-media-fixtures.py.
packages+=(libvips-dev)
# Location metadata removed from photos before they are shared, without re-encoding: gexiv2 over exiv2
# (ContinuumMedia; a runtime-only machine needs just libgexiv2-2). The tests check the result with readers of their
# own: exiftool (libimage-exiftool-perl) for the tags, Pillow (python3-pil, run by /usr/bin/python3) for the pixels.
packages+=(libgexiv2-dev libimage-exiftool-perl python3-pil)
# Where a photo was taken, by name, offline: the cities of GeoNames in libgeonames (ContinuumMedia; its data comes in
# libgeonames-common; a runtime-only machine needs just libgeonames0).
packages+=(libgeonames-dev)
# The record format's golden vectors come from an independent Python encoder (scripts/protocol_vectors.py), which
# test.sh runs to check that the vectors the Swift tests compare against are still its own: Ed25519 from
# python3-cryptography, run by /usr/bin/python3.
packages+=(python3-cryptography)
# The web UI's browser tests (scripts/browser-tests.py): headless Chromium driven through chromedriver (WebDriver);
# zbarimg (zbar-tools) reads the QR code the page shows, as a phone's camera would.
packages+=(chromium chromium-driver python3 zbar-tools)
# `--api-tls` is checked from outside (SettingsAPITests): curl trusts only the node's certificate, openssl computes its
# fingerprint.
packages+=(curl openssl)
# The Debian package (scripts/package.sh): strip and objdump (its Depends come from the binary's NEEDED entries).
packages+=(binutils)

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done

if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null; then sudo="sudo"; else
            echo "setup: need root or sudo to install: ${missing[*]}" >&2
            exit 1
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v swift >/dev/null; then
    echo "setup: swift is not on PATH; install Swift 6.3 (https://swift.org/install) and try again" >&2
    exit 1
fi
