#!/usr/bin/env bash
# How each phase's cost grows with the heap: bench_heap cores of N live
# allocations for each N given (default 10^6, 10^7 and 10^8), and for each
# `heapsift leaks CORE --stats` and `heapsift top CORE --stats`.
# Prints, per size, the phase times, the user time and the peak memory
# beyond the mapped core (and the peak of the anonymous memory, sampled by
# scripts/lib/peak_anon.py in one more run of each command), then the
# phase times per allocation at each size,
# and how much each phase's time per allocation grew from the smallest
# size to each larger one, beside what n log n would give.  An O(n) phase
# keeps its time per allocation; O(n log n) lets it grow by the log ratio.
# Beside them, the machine's own cost of a read at random over a table of
# 4 bytes per allocation at each size (tests/fixtures/perf_ref.c N: a
# chase, each read waiting for the one before, and a gather of
# independent reads), and how much that grew: the phases that read their
# tables at random grow with it however linear their work is.
# Not part of the test suite (tests/test_bench_scripts.py runs it at two
# tiny sizes to keep it working).
#
#   scripts/bench-scale.sh [N...]
#   BENCH_THREADS=2 ...        heapsift --threads (default 1)
#   BENCH_CORES=reuse ...      keep the cores an earlier run left
#   BENCH_KEEP=1 ...           keep every core (by default a core of more
#                              than 2 GB is deleted after its runs)
#   BENCH_COMMANDS="leaks" ... only these commands (default "leaks top")
#   BENCH_PEAK=0 ...           without the sampled run (at 10^8 it takes
#                              as long as the timed one)
#   BENCH_SCALE_DIR=DIR ...    where the cores and figures go
#   HEAPSIFT=path BENCH_FIXTURE=path BENCH_REF=path BENCH_NO_BUILD=1 ...
#                              a given heapsift, bench_heap and perf_ref,
#                              not built (no perf_ref: no reference)
#
# A 10^8-allocation core is about 6.5 GB and needs that much memory twice
# while it is made (the fixture, then the page cache), and heapsift about
# 70 bytes per allocation on top of the mapped core.  The cores go to
# build/bench/scale/; the figures (the best of BENCH_RUNS runs, default
# 1), tab-separated, to
# build/bench/scale/scale.tsv, and the reference's to ref.tsv beside it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HS_BUILD_DIR:-$ROOT/build}"
HS="${HEAPSIFT:-$BUILD/heapsift}"
FIXTURE="${BENCH_FIXTURE:-$BUILD/tests/fixtures/bench_heap}"
REF="${BENCH_REF:-$BUILD/tests/fixtures/perf_ref}"
OUT="${BENCH_SCALE_DIR:-$BUILD/bench/scale}"
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000000 10000000 100000000)
THREADS="${BENCH_THREADS:-1}"
COMMANDS="${BENCH_COMMANDS:-leaks top}"
TSV="$OUT/scale.tsv"
RUNS="${BENCH_RUNS:-1}"
# shellcheck source=scripts/lib/bench-common.sh
. "$ROOT/scripts/lib/bench-common.sh"
say() { printf '==> %s\n' "$*"; }

for n in "${SIZES[@]}"; do
	case "$n" in
	'' | *[!0-9]*) echo "bench-scale.sh: '$n' is not a number of allocations" >&2; exit 2 ;;
	esac
done
if [ ! -x /usr/bin/time ]; then
	echo "bench-scale.sh: /usr/bin/time is missing (scripts/setup.sh installs it)" >&2
	exit 1
fi
if [ -z "${BENCH_NO_BUILD:-}" ]; then
	[ -x "$HS" ] || bash "$ROOT/scripts/setup.sh"
	cmake --build "$BUILD" --target heapsift bench_heap perf_ref >/dev/null
fi
mkdir -p "$OUT"

# make_core N: build/bench/scale/bench_heap-N.core and its record
make_core() {
	local n="$1" core="$OUT/bench_heap-$1.core" rec="$OUT/bench_heap-$1.rec"
	if [ "${BENCH_CORES:-}" = reuse ] && [ -s "$core" ] && [ -s "$rec" ]; then
		return
	fi
	rm -f "$core" "$rec"
	say "bench_heap $n"
	local t0 t1 t2 pid state="" waited=0
	t0=$(date +%s.%N)
	HS_RECORD="$rec" "$FIXTURE" "$n" 2 &
	pid=$!
	trap 'kill -KILL "$pid" 2>/dev/null || true' EXIT
	# about a microsecond per allocation; ten minutes at least
	local limit=$((600 + n / 100000))
	while :; do
		[ -r "/proc/$pid/stat" ] || { echo "bench_heap $n exited early" >&2; exit 1; }
		state="$(cut -d')' -f2 "/proc/$pid/stat" | cut -d' ' -f2)"
		[ "$state" = T ] && break
		sleep 0.2
		waited=$((waited + 1))
		[ "$waited" -lt $((limit * 5)) ] || { echo "bench_heap $n did not stop in $limit s" >&2; exit 1; }
	done
	t1=$(date +%s.%N)
	gcore -o "$OUT/bench_heap-$n.gcore" "$pid" >"$OUT/gcore.log" 2>&1 ||
		{ echo "gcore failed:" >&2; tail -n 5 "$OUT/gcore.log" >&2; exit 1; }
	t2=$(date +%s.%N)
	mv "$OUT/bench_heap-$n.gcore.$pid" "$core"
	bench_evict "$core"
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	trap - EXIT
	printf '  fixture %.1f s, gcore %.1f s, core %d MB\n' \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
		"$(awk -v a="$t1" -v b="$t2" 'BEGIN { print b - a }')" \
		"$(($(stat -c %s "$core") / 1000000))"
}

printf 'n\tcommand\tcore_bytes\twall_s\tuser_s\tmax_rss_kib\tstats\tpeak_anon_kib\n' >"$TSV"
printf 'n\tchase_ns\tgather_ns\n' >"$OUT/ref.tsv"
for n in "${SIZES[@]}"; do
	make_core "$n"
	core="$OUT/bench_heap-$n.core"
	if [ -x "$REF" ]; then
		# (before the core's runs: its table and the core's pages are
		# not in memory at once)
		say "reference: perf_ref $n"
		read -r _ _ _ chase _ gather < <("$REF" "$n") ||
			{ echo "perf_ref $n failed" >&2; exit 1; }
		printf '  a read at random over %s entries: %s ns chased, %s ns gathered\n' \
			"$n" "$chase" "$gather"
		printf '%s\t%s\t%s\n' "$n" "$chase" "$gather" >>"$OUT/ref.tsv"
	fi
	for c in $COMMANDS; do
		say "heapsift $c bench_heap-$n.core --stats --threads $THREADS"
		bench_best_of "$c-$n" "$HS" "$c" "$core" --stats --threads "$THREADS" || exit 1
		grep '^heapsift: stats:' "$OUT/$c-$n.err" | sed 's/^/  /'
		pk=""
		if [ "${BENCH_PEAK:-1}" != 0 ]; then
			read -r _ pk _ < <(python3 "$ROOT/scripts/lib/peak_anon.py" \
				"$HS" "$c" "$core" --stats --threads "$THREADS")
			printf '  peak anonymous memory (sampled, one more run): %s KiB\n' "$pk"
		fi
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$c" "$(stat -c %s "$core")" \
			"$BEST_WALL" "$BEST_USER" "$BEST_RSS" \
			"$(grep '^heapsift: stats:' "$OUT/$c-$n.err" | sed 's/^heapsift: stats: //' | paste -sd'|')" \
			"$pk" >>"$TSV"
	done
	if [ -z "${BENCH_KEEP:-}" ] && [ "$(stat -c %s "$core")" -gt 2000000000 ]; then
		rm -f "$core"
	fi
done

python3 "$ROOT/scripts/lib/scale_table.py" "$TSV"
