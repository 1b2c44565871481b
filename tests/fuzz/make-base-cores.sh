#!/usr/bin/env bash
# Makes the base cores of fuzz_glibc and fuzz_jemalloc (tests/fuzz/base/):
# each fixture runs from a temporary copy (so the executable path the core
# names never exists: the harness behaves the same on every machine), with
# address-space randomization off, until it stops itself; gcore takes the
# core, which is stored gzip'ed.
#
#   tests/fuzz/make-base-cores.sh [BUILD_DIR]     (default: build)
#
# The committed files are the reference: a corpus entry patches the zones
# that the walker reads of that exact core, so making them again (other
# pids, other bytes) changes what the committed corpora mean.  Do it only
# with a new corpus (scripts/fuzz.sh NAME SECONDS --update, then -merge).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
OUT="$ROOT/tests/fuzz/base"
FIXTURES="$BUILD/tests/fixtures"

take() {
	local fixture="$1" out="$2"
	shift 2
	local tmp pid
	tmp="$(mktemp -d)"
	cp "$FIXTURES/$fixture" "$tmp/"
	env -u LD_PRELOAD -u GLIBC_TUNABLES -u MALLOC_CONF -u MALLOC_CHECK_ \
		-u MALLOC_PERTURB_ -u MALLOC_ARENA_MAX -u MALLOC_MMAP_THRESHOLD_ \
		-u MALLOC_TOP_PAD_ -u MALLOC_TRIM_THRESHOLD_ \
		HS_RECORD="$tmp/record" setarch "$(uname -m)" -R "$tmp/$fixture" "$@" \
		>"$tmp/out" 2>&1 </dev/null &
	pid=$!
	local stopped=0
	for _ in $(seq 600); do
		stopped=1
		for t in /proc/"$pid"/task/*/stat; do
			[ -e "$t" ] || { stopped=0; break; }
			[ "$(sed 's/.*) //' "$t" | cut -c1)" = T ] || stopped=0
		done
		[ "$stopped" = 1 ] && break
		sleep 0.05
	done
	if [ "$stopped" != 1 ]; then
		kill -9 "$pid" 2>/dev/null || true
		echo "$fixture did not stop" >&2
		exit 1
	fi
	gcore -o "$tmp/core" "$pid" >"$tmp/gcore.log" 2>&1
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	gzip -9n <"$tmp/core.$pid" >"$OUT/$out"
	rm -rf "$tmp"
	echo "$OUT/$out: $(stat -c %s "$OUT/$out") bytes"
}

mkdir -p "$OUT"
take demo glibc-demo.core.gz 300
take corruptme glibc-corruptme.core.gz
take secrets glibc-secrets.core.gz 42
take je_arenas jemalloc-arenas.core.gz
