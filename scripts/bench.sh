#!/usr/bin/env bash
# Time heapsift on a big heap: about 2.5 million live allocations (a core of
# about 200 MB) made by tests/fixtures/bench_heap.c (lists, trees, hash
# tables, leaked subgraphs).  For each command
#   heapsift info CORE
#   heapsift list --format json CORE > /dev/null
#   heapsift leaks CORE                      (the conservative mark)
#   heapsift top CORE                        (only when BENCH_COMMANDS
#                                            names it)
# and each worker thread count in BENCH_THREADS (default "1 2"), it runs the
# command BENCH_RUNS times (default 3) under /usr/bin/time -v with --stats,
# and reports the best wall time with that run's maximum RSS and heapsift's
# own --stats: phase times, and the anonymous memory (heapsift's own, beyond
# the mapped core) in bytes per allocation.  For leaks and top, one more
# run sampled by scripts/lib/peak_anon.py gives the peak of the anonymous
# memory (the memory goal's measure; the peak RSS less the file-backed
# memory at the end overstates it by the debug files let go before the
# end).  Then the counts: what the fixture made, heapsift list's and
# leaks' classes.
# Not part of the test suite.
#
#   scripts/bench.sh [N_LIVE] [FIXTURE_THREADS]
#   BENCH_CORE=path scripts/bench.sh     reuse an existing core
#   BENCH_RUNS=5 ...                     more runs per command
#   BENCH_COMMANDS="list info" ...       only these commands
#   BENCH_THREADS="1 2" ...              heapsift --threads values
#   BENCH_CHAP=path ...                  also time an already built chap
#                                        (count used / free / leaked)
#   BENCH_JEMALLOC=1 ...                 run the fixture on Debian's
#                                        libjemalloc2 (LD_PRELOAD): a
#                                        jemalloc heap, core
#                                        build/bench/bench_heap_je.core
#   BENCH_IDLE=1 ...                     before each run, wait (up to 10
#                                        min) for 2 s with the CPUs >= 90%
#                                        idle: for a machine shared with
#                                        other work
#   BENCH_REAL=N ...                     then scripts/bench-real.sh N: cores
#                                        of lua5.4, perl and python3 with
#                                        N-entry tables, heapsift beside
#                                        chap (BENCH_CHAP) with the ratios
#   BENCH_SCALE="1000000 10000000 100000000" ...
#                                        then scripts/bench-scale.sh with
#                                        those sizes: each phase's time per
#                                        allocation as the heap grows (a
#                                        10^8 core is about 6.5 GB)
#
# Everything goes to stdout; a tab-separated copy of the figures goes to
# build/bench/bench.tsv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HS_BUILD_DIR:-$ROOT/build}"
HS="$BUILD/heapsift"
FIXTURE="$BUILD/tests/fixtures/bench_heap"
OUT="$BUILD/bench"
N_LIVE="${1:-2500000}"
FIX_THREADS="${2:-2}"
RUNS="${BENCH_RUNS:-3}"
COMMANDS="${BENCH_COMMANDS:-info list leaks}"
THREADS="${BENCH_THREADS:-1 2}"
CHAP="${BENCH_CHAP:-}"
TSV="$OUT/bench.tsv"

say() { printf '==> %s\n' "$*"; }
# shellcheck source-path=SCRIPTDIR source=lib/bench-common.sh
. "$ROOT/scripts/lib/bench-common.sh"

if [ ! -x /usr/bin/time ]; then
	echo "bench.sh: /usr/bin/time is missing (scripts/setup.sh installs it)" >&2
	exit 1
fi
if [ ! -x "$HS" ]; then
	bash "$ROOT/scripts/setup.sh"
fi
cmake --build "$BUILD" --target heapsift bench_heap >/dev/null

mkdir -p "$OUT"
CORE="${BENCH_CORE:-}"
NAME=bench_heap
PRELOAD=""
if [ -n "${BENCH_JEMALLOC:-}" ]; then
	NAME=bench_heap_je
	PRELOAD="$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2)"
fi
if [ -z "$CORE" ]; then
	CORE="$OUT/$NAME.core"
	rm -f "$CORE" "$OUT/$NAME.rec"
	say "running bench_heap $N_LIVE $FIX_THREADS${PRELOAD:+ on $PRELOAD}"
	HS_RECORD="$OUT/$NAME.rec" LD_PRELOAD="$PRELOAD" "$FIXTURE" "$N_LIVE" "$FIX_THREADS" &
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
	gcore -o "$OUT/$NAME.core" "$PID" >"$OUT/gcore.log" 2>&1
	t1=$(date +%s.%N)
	mv "$OUT/$NAME.core.$PID" "$CORE"
	bench_evict "$CORE"
	kill -KILL "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
	trap - EXIT
	printf 'core: %s, %s MB, gcore took %s s\n' "$CORE" \
		"$(($(stat -c %s "$CORE") / 1000000))" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
fi
# what the fixture recorded, when the core is the one it left here
REC=""
if [ -f "$OUT/$NAME.rec" ] && [ "$CORE" -ef "$OUT/$NAME.core" ]; then
	REC="$OUT/$NAME.rec"
	say "what the fixture made"
	cat "$REC"
fi

# before each timed run (bench_best_of, scripts/lib/bench-common.sh): with
# BENCH_IDLE, wait for the machine to be idle
bench_before_run() {
	[ -n "${BENCH_IDLE:-}" ] || return 0
	local idle
	for _ in $(seq 1 300); do
		idle="$(vmstat 2 2 | tail -n 1 | awk '{ print $15 }')"
		[ "$idle" -ge 90 ] && return 0
	done
	echo "bench.sh: the machine was not idle for 10 minutes; running anyway" >&2
}

# after each timed run: its wall time and max RSS
bench_after_run() {
	printf '  %-16s run %d: %7.2f s  %8.1f MiB\n' "$1" "$2" "$3" \
		"$(awk -v r="$4" 'BEGIN { print r / 1024 }')"
}

# stat_field ERRFILE REGEX: the number that follows the pattern (an ERE) in
# heapsift's --stats lines.
stat_field() {
	{ grep '^heapsift: stats:' "$1" | grep -oE "$2 [0-9.]+" || true; } |
		head -n 1 | awk '{ print $NF }'
}

printf 'label\tcommand\tthreads\truns\twall_s\tmax_rss_kib\topen_s\tmodules_s\theap_s\troots_s\tgraph_s\tmark_s\tdominators_s\ttypes_s\ttotal_s\tallocations\tedges\tpeak_rss_kib\trss_anon_kib\trss_file_kib\tanon_bytes_per_alloc\tpeak_minus_file_bytes_per_alloc\tpeak_anon_kib\tpeak_anon_bytes_per_alloc\n' >"$TSV"

for t in $THREADS; do
	for c in $COMMANDS; do
		label="$c-t$t"
		case "$c" in
		info) cmd=("$HS" info "$CORE") ;;
		list) cmd=("$HS" list --format json "$CORE") ;;
		leaks) cmd=("$HS" leaks "$CORE") ;;
		top) cmd=("$HS" top "$CORE") ;;
		*) echo "bench.sh: unknown command '$c'" >&2; exit 2 ;;
		esac
		say "${cmd[*]} --threads $t --stats > /dev/null"
		bench_best_of "$label" "${cmd[@]}" --threads "$t" --stats
		e="$OUT/$label.err"
		f() { stat_field "$e" "$1"; }
		allocs="$({ grep -oE '[0-9]+ allocations' "$e" || true; } | awk '{ print $1 }' | head -n 1)"
		edges="$({ grep -oE '[0-9]+ pointer edges' "$e" || true; } | awk '{ print $1 }' | head -n 1)"
		hwm="$(f 'peak RSS')" anon="$(f 'anonymous')" file="$(f 'file-backed \(the mapped core and libraries\)')"
		bpa="$(awk -v a="$anon" -v n="${allocs:-0}" 'BEGIN { if (n) printf "%.1f", a * 1024 / n; else print "-" }')"
		bpp="$(awk -v h="$hwm" -v f="$file" -v n="${allocs:-0}" 'BEGIN { if (n) printf "%.1f", (h - f) * 1024 / n; else print "-" }')"
		printf '%s best of %d: %.2f s wall, %.1f MiB max RSS\n' "$label" "$RUNS" "$BEST_WALL" \
			"$(awk -v r="$BEST_RSS" 'BEGIN { print r / 1024 }')"
		grep '^heapsift: stats:' "$e" | sed 's/^/  /'
		printf '  anonymous beyond the mapped core at the end: %s KiB = %s bytes per allocation (peak RSS - file-backed: %s bytes per allocation)\n' \
			"$anon" "$bpa" "$bpp"
		pk="" pkb=""
		case "$c" in
		leaks | top)
			# the peak of the anonymous memory, in a run of its own
			# (the sampling takes a share of a CPU)
			read -r _ pk _ _ _ _ _ _ _ pkb < <(python3 "$ROOT/scripts/lib/peak_anon.py" \
				"${cmd[@]}" --threads "$t" --stats)
			printf '  peak anonymous memory (sampled every 0.5 ms, one run): %s KiB = %s bytes per allocation\n' \
				"$pk" "$pkb"
			;;
		esac
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
			"$label" "$c" "$t" "$RUNS" "$BEST_WALL" "$BEST_RSS" \
			"$(f open)" "$(f modules)" "$(f heap)" "$(f roots)" "$(f graph)" "$(f mark)" "$(f dominators)" "$(f types)" "$(f total)" \
			"${allocs:-}" "${edges:-}" "$hwm" "$anon" "$file" "$bpa" "$bpp" "$pk" "$pkb" >>"$TSV"
	done
done

if [ -n "$CHAP" ]; then
	for q in used free leaked; do
		say "echo 'count $q' | chap $CORE"
		bench_best_of "chap-$q" sh -c 'echo "count $1" | "$2" "$3"' sh "$q" "$CHAP" "$CORE"
		printf 'chap-%s best of %d: %.2f s wall, %.1f MiB max RSS\n' "$q" "$RUNS" "$BEST_WALL" \
			"$(awk -v r="$BEST_RSS" 'BEGIN { print r / 1024 }')"
		printf 'chap-%s\tchap count %s\t-\t%s\t%s\t%s\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n' \
			"$q" "$q" "$RUNS" "$BEST_WALL" "$BEST_RSS" >>"$TSV"
	done
	# chap's own memory, from /proc while it waits for its next command
	say "chap memory after 'count leaked'"
	fifo="$OUT/chap.fifo"
	rm -f "$fifo"
	mkfifo "$fifo"
	# line-buffered, so that its answer shows as soon as it is computed
	stdbuf -oL "$CHAP" "$CORE" <"$fifo" >"$OUT/chap.out" 2>&1 &
	cpid=$!
	exec 3>"$fifo"
	echo "count leaked" >&3
	for _ in $(seq 1 1200); do
		grep -q 'allocations use' "$OUT/chap.out" && break
		sleep 0.1
	done
	chap_kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$cpid/status"; }
	hwm="$(chap_kib VmHWM)" anon="$(chap_kib RssAnon)" file="$(chap_kib RssFile)"
	exec 3>&-
	wait "$cpid" || true
	rm -f "$fifo"
	printf 'chap: peak RSS %s KiB; anonymous %s KiB, file-backed %s KiB' "$hwm" "$anon" "$file"
	if [ -n "${allocs:-}" ]; then
		printf ' (anonymous: %s bytes per allocation of heapsift'"'"'s %s)' \
			"$(awk -v a="$anon" -v n="$allocs" 'BEGIN { printf "%.1f", a * 1024 / n }')" "$allocs"
	fi
	printf '\n'
	say "chap counts"
	for q in used free leaked anchored unreferenced; do
		printf 'chap count %-12s ' "$q"
		echo "count $q" | "$CHAP" "$CORE" 2>/dev/null | grep -E 'allocations use' | tail -n 1
	done
fi

say "counts"
# list prints one allocation a line: count them as they stream by
"$HS" list --format json --state all --quiet "$CORE" | python3 -c '
import collections, re, sys
field = lambda k, line: (re.search(r"\"%s\":\"([^\"]*)\"" % k, line) or [None, "-"])[1]
by_state, by_where, by_reach = (collections.Counter() for _ in range(3))
for line in sys.stdin:
    if "\"address\"" not in line:
        continue
    st = field("state", line)
    by_state[st] += 1
    by_where[st + "/" + field("where", line)] += 1
    if st == "used":
        by_reach[field("reach", line)] += 1
c = lambda d: ", ".join(f"{k} {v}" for k, v in sorted(d.items()))
print("heapsift list --state all: " + c(by_state))
print("  by state/where: " + c(by_where))
print("  used, by reach: " + c(by_reach))
'
"$HS" leaks --format json --quiet "$CORE" >"$OUT/leaks.json"
python3 - "$OUT/leaks.json" "$REC" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print("heapsift leaks: " + ", ".join(f"{k} {v['count']} ({v['bytes']} B)"
                                    for k, v in s.items() if "count" in v))
print("  held via header rules: " + ", ".join(f"{k} {v['count']}" for k, v in s["via"].items()))
if not sys.argv[2]:
    sys.exit(0)
made = dict(l.split() for l in open(sys.argv[2]) if l.strip())
# the list linked through interior pointers is a convention the graph
# learns (every node is pointed to 24 bytes in): reachable via "learned",
# or via "typed" where a pointer's DWARF type says a node is there
for what, a, theirs in (("leaked", s["leaked"]["count"], "leaked"),
                        ("leak roots", s["leak_root"]["count"], "leak_roots"),
                        ("interior-linked list (possible + learned + typed)",
                         s["possible"]["count"] + s["via"]["learned"]["count"] +
                         s["via"]["typed"]["count"], "interior")):
    b = int(made[theirs])
    print(f"  {what}: heapsift {a}, the fixture made {b}" + ("" if a == b else "  <-- differs"))
EOF
say "figures in $TSV"
if [ -n "${BENCH_REAL:-}" ]; then
	say "real programs: scripts/bench-real.sh $BENCH_REAL"
	bash "$ROOT/scripts/bench-real.sh" "$BENCH_REAL"
fi
if [ -n "${BENCH_SCALE:-}" ]; then
	say "scale: scripts/bench-scale.sh $BENCH_SCALE"
	# shellcheck disable=SC2086 # a list of sizes
	bash "$ROOT/scripts/bench-scale.sh" $BENCH_SCALE
fi
