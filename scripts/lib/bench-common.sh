# shellcheck shell=bash
# Timing for the benchmark scripts (scripts/bench.sh, scripts/bench-real.sh),
# sourced by them, not run.  The caller sets RUNS (runs per command) and OUT
# (a directory for the time logs) and has /usr/bin/time (GNU time).

# bench_evict CORE: writes out the core gcore has just made and drops it
# from the page cache, so that the first run reads it as a core on the
# disk is read.  heapsift maps a core asking for huge pages
# (formats/elfcore.c): read that way, the page cache keeps it in 2 MiB
# folios, which later runs (and chap's) map with one page-table entry
# each.  Left as gcore wrote it, it stays in 4 KiB pages, whose first
# touch in each run costs about 2 us on a virtual machine with shadow
# page tables (docs/performance.md).
bench_evict() {
	sync "$1" && dd if="$1" iflag=nocache count=0 status=none
}

# The wall time (s), user time (s) and max RSS (KiB) in a /usr/bin/time -v
# log.
bench_time_wall() {
	awk -F': ' '/Elapsed \(wall clock\)/ {
		n = split($2, t, ":"); s = 0
		for (k = 1; k <= n; k++) s = s * 60 + t[k]
		print s }' "$1"
}
bench_time_user() { awk -F': ' '/User time \(seconds\)/ { print $2 }' "$1"; }
bench_time_rss() { awk -F': ' '/Maximum resident set size/ { print $2 }' "$1"; }

# bench_best_of LABEL CMD...: runs CMD RUNS times under /usr/bin/time -v
# (stdin and stdout /dev/null) and keeps the fastest run: its time log and
# stderr as $OUT/LABEL.time and $OUT/LABEL.err, its wall time, user time
# and max RSS in BEST_WALL, BEST_USER and BEST_RSS.  A run that fails
# returns 1 after the tail of its stderr.  Hooks, called when the caller
# defines them: bench_before_run before each run, and
# bench_after_run LABEL I WALL RSS after each run.
bench_best_of() {
	local label="$1"
	shift
	local i log="$OUT/run.time" err="$OUT/run.err" wall user rss rc
	# shellcheck disable=SC2034  # the caller's results
	BEST_WALL="" BEST_USER="" BEST_RSS=""
	for i in $(seq 1 "$RUNS"); do
		rc=0
		if declare -F bench_before_run >/dev/null; then
			bench_before_run
		fi
		/usr/bin/time -v -o "$log" "$@" >/dev/null 2>"$err" </dev/null || rc=$?
		if [ "$rc" -ne 0 ]; then
			echo "$label: exit $rc" >&2
			tail -n 5 "$err" >&2
			return 1
		fi
		wall="$(bench_time_wall "$log")"
		user="$(bench_time_user "$log")"
		rss="$(bench_time_rss "$log")"
		if declare -F bench_after_run >/dev/null; then
			bench_after_run "$label" "$i" "$wall" "$rss"
		fi
		if [ -z "$BEST_WALL" ] || awk -v w="$wall" -v b="$BEST_WALL" 'BEGIN { exit !(w < b) }'; then
			# shellcheck disable=SC2034  # the caller's results
			BEST_WALL="$wall" BEST_USER="$user" BEST_RSS="$rss"
			cp "$log" "$OUT/$label.time"
			cp "$err" "$OUT/$label.err"
		fi
	done
}
