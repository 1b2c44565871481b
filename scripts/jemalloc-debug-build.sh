#!/usr/bin/env bash
# Build jemalloc as a static library with debug info into OUT (lib/ and
# include/), from the distribution's source with upstream's configure
# defaults (no profiling: a configuration unlike Debian's, on purpose).
# tests/jemalloc.cmake links a fixture with it: a program with its own -g
# jemalloc, whose layouts heapsift must take from DWARF, not from its table.
# Does nothing when OUT already has the library.
#
#   scripts/jemalloc-debug-build.sh OUT
set -euo pipefail

OUT="${1:?usage: jemalloc-debug-build.sh OUT}"
[ -f "$OUT/lib/libjemalloc.a" ] && exit 0
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
SRC="$(bash "$ROOT/scripts/jemalloc-source.sh" "$WORK")"
cd "$SRC"
./configure --with-version=VERSION --disable-cxx EXTRA_CFLAGS="-g" >"$WORK/configure.log" 2>&1 ||
	{ tail -20 "$WORK/configure.log" >&2; exit 1; }
make -j"$(nproc)" build_lib_static >"$WORK/make.log" 2>&1 || { tail -20 "$WORK/make.log" >&2; exit 1; }
mkdir -p "$OUT/lib" "$OUT/include/jemalloc"
cp lib/libjemalloc.a "$OUT/lib/"
cp include/jemalloc/jemalloc.h "$OUT/include/jemalloc/"
echo "built $OUT/lib/libjemalloc.a ($(cat VERSION))"
