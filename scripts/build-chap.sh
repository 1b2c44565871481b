#!/usr/bin/env bash
# Builds chap (github.com/vmware/chap, the peer heapsift is measured against
# in scripts/bench.sh) from its public source, outside this tree, and prints
# the binary's path.  Not part of the test suite; nothing of chap is copied
# into heapsift.
#
#   scripts/build-chap.sh [DEST]
#
# DEST: where the sources and the build go (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/heapsift-chap); an existing build of the
# same commits is reused.
#   CHAP_GIT=URL|DIR     chap's repository (default its GitHub URL; a local
#                        clone or mirror works offline)
#   REPLXX_GIT=URL|DIR   its submodule thirdparty/replxx
#   CHAP_COMMIT=...      default 452e7be, the commit docs/performance.md used
# Needs git, cmake and g++ (build-essential).
set -euo pipefail

DEST="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/heapsift-chap}"
CHAP_GIT="${CHAP_GIT:-https://github.com/vmware/chap.git}"
REPLXX_GIT="${REPLXX_GIT:-https://github.com/AmokHuginnsson/replxx.git}"
CHAP_COMMIT="${CHAP_COMMIT:-452e7be}"
say() { echo "build-chap: $*" >&2; }

mkdir -p "$DEST"
SRC="$DEST/chap-$CHAP_COMMIT"
BIN="$SRC/build/chap"
if [ -x "$BIN" ]; then
	echo "$BIN"
	exit 0
fi
if [ ! -d "$SRC/.git" ]; then
	say "cloning $CHAP_GIT"
	rm -rf "$SRC"
	git clone -q --no-checkout "$CHAP_GIT" "$SRC"
fi
# every file the clone holds; a partial mirror lacks chap's big test cores,
# which its configure step copies (chap's own tests are not run here): they
# become empty files
missing=()
rm -f "$DEST/files.list"
while IFS=$'\t' read -r meta path; do
	set -- $meta
	[ "$2" = blob ] || continue
	if git -C "$SRC" cat-file -e "$3" 2>/dev/null; then
		printf '%s\0' "$path" >>"$DEST/files.list"
	else
		missing+=("$path")
	fi
done < <(git -C "$SRC" ls-tree -r "$CHAP_COMMIT")
xargs -0 git -C "$SRC" checkout -q "$CHAP_COMMIT" -- <"$DEST/files.list"
for path in "${missing[@]}"; do
	mkdir -p "$SRC/$(dirname "$path")"
	: >"$SRC/$path"
done
[ ${#missing[@]} = 0 ] || say "${#missing[@]} test files are not in $CHAP_GIT: left empty"
# the submodule at the commit chap records for it
REPLXX_COMMIT="$(git -C "$SRC" ls-tree "$CHAP_COMMIT" thirdparty/replxx | awk '{print $3}')"
if [ ! -e "$SRC/thirdparty/replxx/.git" ]; then
	say "cloning $REPLXX_GIT"
	rm -rf "$SRC/thirdparty/replxx"
	git clone -q "$REPLXX_GIT" "$SRC/thirdparty/replxx"
fi
git -C "$SRC/thirdparty/replxx" checkout -q "$REPLXX_COMMIT"
say "building chap $CHAP_COMMIT (replxx ${REPLXX_COMMIT:0:7}) in $SRC/build"
cmake -S "$SRC" -B "$SRC/build" -DCMAKE_BUILD_TYPE=Release >"$DEST/cmake.log" 2>&1 ||
	{ say "cmake failed, see $DEST/cmake.log"; exit 1; }
cmake --build "$SRC/build" -j"$(nproc)" >"$DEST/build.log" 2>&1 ||
	{ say "the build failed, see $DEST/build.log"; exit 1; }
[ -x "$BIN" ] || { say "no chap binary at $BIN"; exit 1; }
echo "$BIN"
