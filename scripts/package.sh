#!/usr/bin/env bash
# Builds the Debian package: continuum-node_VERSION_ARCH.deb, which installs on a Debian 12 machine with no Swift.
#
#   scripts/package.sh [--debug [--keep-static]] [--out DIR]
#
# - The binary is linked with the Swift standard library and Foundation inside (--static-swift-stdlib); it needs
#   only Debian's runtime libraries, which become the package's Depends (each library `ldd` lists, mapped to its
#   package by `dpkg -S`); avahi-daemon is recommended (LAN discovery).
# - /usr/bin/continuum-node links to /usr/lib/continuum-node/continuum-node, beside which lies the web UI's resource
#   bundle (Foundation's Bundle looks next to the executable).
# - A systemd user unit (packaging/continuum-node.service): systemctl --user enable --now continuum-node.
# - The man page, continuum-node(1), made from the commands' own help by swift-argument-parser's generate-manual
#   (the tool behind its GenerateManual plugin), and bash, zsh and fish completions from --generate-completion-script.
#
# --debug packages a debug build, quickly, for the test (scripts/package-test.sh); the package to ship is release.
# --keep-static leaves the debug build folder's binary linked with the Swift runtime inside (it works the same), rather
# than linking it back: for the test command's last step, where nothing runs that binary afterwards.
# Output: DIR (default .build/package)/continuum-node_VERSION_ARCH.deb; its path is the last line printed.
set -euo pipefail
cd "$(dirname "$0")/.."
# Files and folders of the package readable by all, whatever the builder's umask.
umask 022

configuration=release
out=.build/package
keep_static=false
while (($#)); do
    case "$1" in
    --debug) configuration=debug ;;
    --keep-static) keep_static=true ;;
    --out)
        out="$2"
        shift
        ;;
    *)
        echo "package.sh: unknown argument '$1' (usage: scripts/package.sh [--debug [--keep-static]] [--out DIR])" >&2
        exit 64
        ;;
    esac
    shift
done

scripts/setup.sh
echo "package.sh: building continuum-node ($configuration, Swift runtime linked in)" >&2
# static_runtime, and debug_flags: the debug build's flags, the same as scripts/test.sh's.
source scripts/build-flags.sh
[ "$configuration" = release ] && debug_flags=()
# A release build for the package has its own build folder: compiled for the static runtime, it would otherwise
# make the next plain release build (scripts/node.sh, the benchmarks) compile everything again. A debug build, for
# the test, is only linked anew (debug compiles are not whole-module), then linked back below.
scratch=("${build_path[@]}")
[ "$configuration" = release ] && scratch=(--scratch-path .build-static)
swift build "${scratch[@]}" -c "$configuration" "${debug_flags[@]}" "${static_runtime[@]}" --product continuum-node >&2
bin_dir="$(swift build "${scratch[@]}" -c "$configuration" --show-bin-path)"
root="$(mktemp -d)"
chmod 0755 "$root"
trap 'rm -rf "$root"' EXIT
install -D -m 0755 "$bin_dir/continuum-node" "$root/usr/lib/continuum-node/continuum-node"
if ldd "$root/usr/lib/continuum-node/continuum-node" | grep -qE 'libswift|libFoundation|libdispatch'; then
    echo "package.sh: the binary still loads the Swift runtime:" >&2
    ldd "$root/usr/lib/continuum-node/continuum-node" | grep -E 'libswift|libFoundation|libdispatch' >&2
    exit 1
fi
# The debug build folder's own binary, for the tests, linked against the shared runtime again.
if [ "$configuration" = debug ] && ! $keep_static; then swift build "${build_path[@]}" "${debug_flags[@]}" --product continuum-node >&2; fi
# The man page tool, debug: it only reads the binary's description of itself.
swift build "${build_path[@]}" "${debug_flags[@]}" --product generate-manual >&2
manual_tool="$(swift build "${build_path[@]}" --show-bin-path)/generate-manual"
binary="$root/usr/lib/continuum-node/continuum-node"
version="$("$binary" --version | awk '{print $1}')"
arch="$(dpkg --print-architecture)"
lib="$root/usr/lib/continuum-node"
install -d "$lib" "$root/usr/bin" "$root/usr/lib/systemd/user" "$root/usr/share/man/man1" \
    "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d" "$root/usr/share/doc/continuum-node" "$root/DEBIAN"
strip --strip-unneeded "$lib/continuum-node"
cp -R "$bin_dir/continuum-node_ContinuumHTTP.resources" "$lib/"
ln -s ../lib/continuum-node/continuum-node "$root/usr/bin/continuum-node"
install -m 0644 packaging/continuum-node.service "$root/usr/lib/systemd/user/continuum-node.service"

# The man page: one page for the command and all its subcommands, from the help the binary itself describes.
manual="$(mktemp -d)"
"$manual_tool" "$binary" --output-directory "$manual" \
    --authors "the continuum-node authors" --section 1 >&2
# The sections the commands' help has no place for (ENVIRONMENT, FILES, EXAMPLES), in mdoc, before AUTHORS.
grep -qx '\.Sh AUTHORS' "$manual/continuum-node.1" || {
    echo "package.sh: the generated man page has no AUTHORS section to put ENVIRONMENT, FILES and EXAMPLES before" >&2
    exit 1
}
awk -v extra=packaging/continuum-node.1.extra '
    $0 == ".Sh AUTHORS" { while ((getline line < extra) > 0) print line }
    { print }
' "$manual/continuum-node.1" >"$manual/continuum-node.1.full"
gzip -9n <"$manual/continuum-node.1.full" >"$root/usr/share/man/man1/continuum-node.1.gz"
rm -rf "$manual"

"$binary" --generate-completion-script bash >"$root/usr/share/bash-completion/completions/continuum-node"
"$binary" --generate-completion-script zsh >"$root/usr/share/zsh/vendor-completions/_continuum-node"
"$binary" --generate-completion-script fish >"$root/usr/share/fish/vendor_completions.d/continuum-node.fish"
gzip -9n <README.md >"$root/usr/share/doc/continuum-node/README.md.gz"
# The documents the man page and the commands' help name.
for document in CLI API WEB PROTOCOL; do
    gzip -9n <"Docs/$document.md" >"$root/usr/share/doc/continuum-node/$document.md.gz"
done
cat >"$root/usr/share/doc/continuum-node/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: continuum-node
Comment: Built from source with the Swift standard library, Foundation, SwiftNIO, GRDB, Hummingbird, swift-crypto
 and swift-argument-parser linked in (Apache License 2.0, and MIT for GRDB).
 .
 The web UI's world map (world.svg) is drawn from Natural Earth's 1:110m countries (naturalearthdata.com), in the
 public domain. Places are named from the cities of GeoNames (geonames.org, CC BY 4.0), which Debian's
 libgeonames-common package holds.
EOF

# Depends: the Debian package of each shared library the binary names itself (its NEEDED entries; theirs bring their
# own dependencies), found where the loader finds it.
needed="$(objdump -p "$lib/continuum-node" | awk '$1 == "NEEDED" {print $2}')"
owners=()
for name in $needed; do
    path="$(ldd "$lib/continuum-node" | awk -v n="$name" '$1 == n && $3 ~ /^\// {print $3}')"
    # The loader itself (ld-linux) is named without a path; libc6 holds it and is listed anyway.
    [ -n "$path" ] || continue
    owner="$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null || true)"
    if [ -z "$owner" ]; then
        echo "package.sh: no Debian package holds $path (needed as $name); cannot say what to depend on" >&2
        exit 1
    fi
    owners+=("${owner%%:*}")
done
depends="$(printf '%s\n' "${owners[@]}" | sort -u | paste -sd, - | sed 's/,/, /g')"
size="$(du -sk "$root/usr" | cut -f1)"
# Who builds the package answers for it: Debian's DEBFULLNAME and DEBEMAIL, else git's user.name and user.email,
# else whoever runs this on this machine. There is no project web site: no Homepage field.
maintainer_name="${DEBFULLNAME:-$(git config user.name 2>/dev/null || true)}"
maintainer_email="${DEBEMAIL:-$(git config user.email 2>/dev/null || true)}"
[ -n "$maintainer_name" ] || maintainer_name="$(id -un)"
[ -n "$maintainer_email" ] || maintainer_email="$(id -un)@$(hostname -f 2>/dev/null || hostname)"
cat >"$root/DEBIAN/control" <<EOF
Package: continuum-node
Version: $version
Architecture: $arch
Maintainer: $maintainer_name <$maintainer_email>
Installed-Size: $size
Depends: $depends
Recommends: avahi-daemon
Section: net
Priority: optional
Description: peer-to-peer photo sharing for the local network
 Run it on several machines of one LAN: they find each other over mDNS (Avahi)
 and exchange signed posts, comments and photos over TLS, each keeping its own
 copy in SQLite. Private groups, invites by code or QR, follow a post and be
 notified of its comments, a web UI for phones. No server, works offline.
EOF

mkdir -p "$out"
deb="$out/continuum-node_${version}_${arch}.deb"
compression=(-Zxz)
[ "$configuration" = debug ] && compression=(-Zgzip -z1)
dpkg-deb --root-owner-group "${compression[@]}" --build "$root" "$deb" >&2
echo "$deb"
