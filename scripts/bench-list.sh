#!/usr/bin/env bash
# Time heapsift on a big heap: about 2.5 million live allocations (a core of
# about 200 MB) made by tests/fixtures/bench_heap.c.  Reports the best of 3
# runs (wall time, and the maximum resident set size of that run, from
# /usr/bin/time -v) for
#   heapsift list --format json CORE > /dev/null
#   heapsift info CORE > /dev/null
# Not part of the test suite.
#
#   scripts/bench-list.sh [N_LIVE] [THREADS]
#   BENCH_CORE=path scripts/bench-list.sh    reuse an existing core
#   BENCH_RUNS=5 ...                         more runs per command
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HS_BUILD_DIR:-$ROOT/build}"
HS="$BUILD/heapsift"
FIXTURE="$BUILD/tests/fixtures/bench_heap"
OUT="$BUILD/bench"
N_LIVE="${1:-2500000}"
THREADS="${2:-2}"
RUNS="${BENCH_RUNS:-3}"

say() { printf '==> %s\n' "$*"; }

if [ ! -x /usr/bin/time ]; then
	echo "bench-list.sh: /usr/bin/time is missing (scripts/setup.sh installs it)" >&2
	exit 1
fi
if [ ! -x "$HS" ]; then
	bash "$ROOT/scripts/setup.sh"
fi
cmake --build "$BUILD" --target heapsift bench_heap >/dev/null

mkdir -p "$OUT"
CORE="${BENCH_CORE:-}"
if [ -z "$CORE" ]; then
	CORE="$OUT/bench_heap.core"
	rm -f "$CORE"
	say "running bench_heap $N_LIVE $THREADS"
	HS_RECORD="$OUT/bench_heap.rec" "$FIXTURE" "$N_LIVE" "$THREADS" &
	PID=$!
	trap 'kill -KILL "$PID" 2>/dev/null || true' EXIT
	state=""
	for _ in $(seq 1 1200); do
		[ -r "/proc/$PID/stat" ] || { echo "bench_heap exited early" >&2; exit 1; }
		stat="$(cat "/proc/$PID/stat")"
		state="$(printf '%s' "${stat##*) }" | cut -d' ' -f1)"
		[ "$state" = T ] && break
		sleep 0.1
	done
	[ "$state" = T ] || { echo "bench_heap did not stop in 120 s" >&2; exit 1; }
	say "gcore"
	t0=$(date +%s.%N)
	gcore -o "$OUT/bench_heap.core" "$PID" >"$OUT/gcore.log" 2>&1
	t1=$(date +%s.%N)
	mv "$OUT/bench_heap.core.$PID" "$CORE"
	kill -KILL "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
	trap - EXIT
	printf 'core: %s, %s MB, gcore took %s s\n' "$CORE" \
		"$(($(stat -c %s "$CORE") / 1000000))" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
	cat "$OUT/bench_heap.rec"
fi

# best_of LABEL CMD...: run CMD RUNS times under /usr/bin/time -v, print the
# best wall time and the max RSS of that run.
best_of() {
	local label="$1"
	shift
	local best_wall="" best_rss="" i log wall rss rc
	for i in $(seq 1 "$RUNS"); do
		log="$OUT/time.$i.log"
		rc=0
		/usr/bin/time -v -o "$log" "$@" >/dev/null 2>"$OUT/stderr.$i.log" || rc=$?
		if [ "$rc" -ne 0 ]; then
			echo "$label: exit $rc" >&2
			tail -n 5 "$OUT/stderr.$i.log" >&2
			return 1
		fi
		# "Elapsed (wall clock) time (h:mm:ss or m:ss): 0:01.23"
		wall="$(awk -F': ' '/Elapsed \(wall clock\)/ {
			n = split($2, t, ":"); s = 0
			for (k = 1; k <= n; k++) s = s * 60 + t[k]
			print s }' "$log")"
		rss="$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$log")"
		printf '  %-6s run %d: %7.2f s  %8.1f MiB\n' "$label" "$i" "$wall" "$(awk -v r="$rss" 'BEGIN { print r / 1024 }')"
		if [ -z "$best_wall" ] || awk -v w="$wall" -v b="$best_wall" 'BEGIN { exit !(w < b) }'; then
			best_wall="$wall"
			best_rss="$rss"
		fi
	done
	printf '%-6s best of %d: %.2f s wall, %.1f MiB max RSS\n' "$label" "$RUNS" \
		"$best_wall" "$(awk -v r="$best_rss" 'BEGIN { print r / 1024 }')"
}

say "heapsift list --format json $CORE > /dev/null"
best_of list "$HS" list --format json "$CORE"
say "heapsift info $CORE > /dev/null"
best_of info "$HS" info "$CORE"

say "sanity: allocations listed"
n_used="$("$HS" list --format json --state used "$CORE" | grep -o '"state": *"used"' | wc -l)"
echo "heapsift lists $n_used used allocations"
if [ -f "$OUT/bench_heap.rec" ] && [ -z "${BENCH_CORE:-}" ]; then
	echo "the fixture made $(awk '/^live/ {print $2}' "$OUT/bench_heap.rec") live ones (plus libc's own)"
fi
