#!/usr/bin/env bash
# Unpack the distribution's jemalloc source into DIR and print the source
# tree's path: `apt-get source` of the installed libjemalloc2's version
# (a temporary deb-src entry for Debian 12 is added when apt has none).
# Used by scripts/jemalloc-layout.sh and scripts/jemalloc-debug-build.sh.
#
#   scripts/jemalloc-source.sh DIR
set -euo pipefail

DIR="${1:?usage: jemalloc-source.sh DIR}"
mkdir -p "$DIR"
cd "$DIR"
PKGVER="$(dpkg-query -W -f '${Version}' libjemalloc2 2>/dev/null || true)"
ADDED=""
cleanup() { if [ -n "$ADDED" ]; then rm -f "$ADDED"; apt-get update -qq || true; fi; }
trap cleanup EXIT
if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	ADDED=/etc/apt/sources.list.d/heapsift-jemalloc-src.sources
	printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$ADDED"
	apt-get update -qq
fi
apt-get source -qq --download-only "jemalloc${PKGVER:+=$PKGVER}" >&2
tar xjf jemalloc_*.orig.tar.bz2
ls -d "$DIR"/jemalloc-*/ | head -1
