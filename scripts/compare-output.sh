#!/usr/bin/env bash
# Compares two heapsift builds on the same cores, for refactorings that
# must not change what users see (docs/testing.md, "Same output").
#
#   scripts/compare-output.sh OLD NEW [CORE...]
#
# OLD, NEW: heapsift binaries (copy the old one aside before rebuilding).
# CORE: the cores to run; by default every core the test suite left under
# build/tests/work (about 40 after a full ctest: glibc 2.31 and 2.36,
# jemalloc, C++, redacted and corrupted ones).  Each of info, list, leaks,
# top, types and frag runs in JSON and text with both builds; stdout,
# stderr and the exit code are compared.  Prints every difference; exits
# 1 when some JSON output or exit code differs, 0 otherwise (text-only
# differences are listed, for the author to judge and document).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -ge 2 ] || { echo "usage: scripts/compare-output.sh OLD NEW [CORE...]" >&2; exit 2; }
OLD="$1" NEW="$2"
shift 2
for b in "$OLD" "$NEW"; do
	[ -x "$b" ] || { echo "compare-output: $b is not an executable" >&2; exit 2; }
done
CORES=("$@")
if [ ${#CORES[@]} -eq 0 ]; then
	while IFS= read -r f; do
		# an ELF core: magic, then e_type 4 at offset 16
		if [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] &&
			[ "$(od -An -tx1 -j16 -N2 "$f" | tr -d ' ')" = 0400 ]; then
			CORES+=("$f")
		fi
	done < <(find "$ROOT/build/tests/work" -type f -size +50k 2>/dev/null | sort)
fi
[ ${#CORES[@]} -gt 0 ] || { echo "compare-output: no cores (run the tests first, or name some)" >&2; exit 2; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
json_diff=0 text_diff=0 runs=0
for core in "${CORES[@]}"; do
	for cmd in info list leaks top types frag; do
		for fmt in json text; do
			for side in old new; do
				bin="$OLD"
				[ $side = new ] && bin="$NEW"
				rc=0
				"$bin" "$cmd" "$core" --format "$fmt" --threads 2 \
					>"$TMP/$side.out" 2>"$TMP/$side.err" || rc=$?
				echo "exit $rc" >>"$TMP/$side.err"
			done
			runs=$((runs + 1))
			if ! cmp -s "$TMP/old.out" "$TMP/new.out" ||
				! cmp -s "$TMP/old.err" "$TMP/new.err"; then
				echo "== $core: $cmd --format $fmt differs"
				diff "$TMP/old.out" "$TMP/new.out" | head -20 || true
				diff "$TMP/old.err" "$TMP/new.err" | head -10 || true
				if [ $fmt = json ] || ! cmp -s <(tail -1 "$TMP/old.err") <(tail -1 "$TMP/new.err"); then
					json_diff=$((json_diff + 1))
				else
					text_diff=$((text_diff + 1))
				fi
			fi
		done
	done
done
echo "${#CORES[@]} cores, $runs runs: $json_diff JSON or exit code differences, $text_diff text-only"
[ $json_diff -eq 0 ]
