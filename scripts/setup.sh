#!/usr/bin/env bash
# Install what heapsift needs on Debian 12 and build it into build/.
#
# Runs as root, or through sudo when not root.  Safe to run again: packages
# that are already installed (at the right version) are left alone, and the
# build is incremental.
#
#   scripts/setup.sh              install + build
#   HS_SETUP_FORCE_APT=1 ...      run apt-get even if everything is there
#   HS_BUILD_DIR=dir ...          build somewhere else than build/
#   HS_FUZZ_CI=1 ...              also clang and libFuzzer (scripts/fuzz.sh)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HS_BUILD_DIR:-$ROOT/build}"

say() { printf '==> %s\n' "$*"; }

PACKAGES=(
	build-essential cmake pkg-config
	libelf-dev libdw-dev libjansson-dev libcapstone-dev zlib1g-dev libjemalloc-dev
	elfutils libdebuginfod1 debuginfod gdb python3 valgrind time golang-go chromium
	redis-server bzip2 libtcmalloc-minimal4 sqlite3 lua5.4 libsqlite3-dev python3-dev
)
# the fuzz harnesses (scripts/fuzz.sh, run by scripts/test.sh with
# HS_FUZZ_CI=1): clang and its libFuzzer runtime
if [ "${HS_FUZZ_CI:-0}" = 1 ]; then
	PACKAGES+=(clang libclang-rt-14-dev)
fi

if [ "$(id -u)" -eq 0 ]; then
	SUDO=()
elif command -v sudo >/dev/null 2>&1; then
	SUDO=(sudo)
else
	echo "setup.sh: not root and sudo is not available" >&2
	exit 1
fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
	echo "setup.sh: this script needs a Debian system (dpkg and apt-get)" >&2
	exit 1
fi

installed_version() {
	dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$1" 2>/dev/null |
		awk '$1 == "ii" { print $2 }'
}

# libc debug info must match the running libc exactly: heapsift finds it by
# the build-id of libc.so.6, and only the same package version has it.
LIBC_VERSION="$(dpkg-query -W -f='${Version}' libc6)"
missing=()
for p in "${PACKAGES[@]}"; do
	[ -n "$(installed_version "$p")" ] || missing+=("$p")
done
if [ "$(installed_version libc6-dbg)" != "$LIBC_VERSION" ]; then
	missing+=("libc6-dbg=$LIBC_VERSION")
fi

if [ "${#missing[@]}" -eq 0 ] && [ -z "${HS_SETUP_FORCE_APT:-}" ]; then
	say "all packages present (libc6 and libc6-dbg $LIBC_VERSION)"
else
	export DEBIAN_FRONTEND=noninteractive
	say "apt-get update"
	"${SUDO[@]}" apt-get update -q
	say "apt-get install ${PACKAGES[*]} libc6-dbg=$LIBC_VERSION"
	if ! "${SUDO[@]}" apt-get install -y -q --no-install-recommends \
		"${PACKAGES[@]}" "libc6-dbg=$LIBC_VERSION"; then
		echo "setup.sh: could not install the packages above; libc6-dbg must be" \
			"exactly version $LIBC_VERSION (the installed libc6)" >&2
		exit 1
	fi
fi

# a static jemalloc with debug info, for the test of the DWARF path
# (tests/jemalloc.cmake); built once, from Debian's source
say "jemalloc with debug info in $ROOT/build/jemalloc-g"
"${SUDO[@]}" bash "$ROOT/scripts/jemalloc-debug-build.sh" "$ROOT/build/jemalloc-g"

say "configure $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHS_WERROR=ON
say "build $BUILD"
cmake --build "$BUILD" -j"$(nproc)"
say "built $BUILD/heapsift"
