#!/usr/bin/env bash
# Runs heapsift's libFuzzer harnesses (tests/fuzz/; docs/testing.md,
# "Fuzzing").  Configures and builds build-fuzz/ (clang, HS_FUZZ=ON) when
# needed, then runs one harness for SECONDS on its committed corpus.
#
#   scripts/fuzz.sh NAME SECONDS [--update] [--merge] [--keep-going]
#   scripts/fuzz.sh all SECONDS [...]         each harness in turn
#
# NAME: core, notes, dwarf, glibc, glibc_mock, jemalloc, jemalloc_mock,
# pymalloc_mock
# (fuzz_NAME also works).
# New inputs go to build-fuzz/fuzz-corpus/NAME (scratch), never to the
# committed tests/fuzz/corpus/NAME, unless:
#   --update   new inputs are written to the committed corpus directly
#   --merge    after the run, the committed corpus is replaced by a minimal
#              one (libFuzzer -merge=1 on edges only: -use_counters=0) that
#              covers it and the scratch corpus; regression inputs (files
#              named regress-*) are always kept.  SECONDS 0: merge only.
#   --keep-going  fuzz on past crashes (libFuzzer -fork=1 with
#              -ignore_crashes etc.): to grow a corpus while a known bug
#              (tests/fuzz/findings/) is not fixed yet; each crash is still
#              written and reported
# HS_FUZZ_SEED=N fixes libFuzzer's random seed (CI uses it).
# Crashes, leaks, timeouts and out-of-memory inputs are written to
# build-fuzz/fuzz-crashes/NAME/; the script prints executions, edges (cov)
# and any such file, and exits 1 when there is one (inputs slower than
# 10 s, slow-unit-*, are printed but do not fail).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build-fuzz"
FUZZ="$ROOT/tests/fuzz"
ALL=(core notes dwarf glibc glibc_mock jemalloc jemalloc_mock pymalloc_mock summary)

usage() {
	echo "usage: scripts/fuzz.sh NAME|all SECONDS [--update] [--merge] [--keep-going]" >&2
	echo "  NAME: ${ALL[*]}" >&2
	exit 2
}

[ $# -ge 2 ] || usage
WHICH="${1#fuzz_}"
SECONDS_EACH="$2"
shift 2
UPDATE=0
MERGE=0
KEEP_GOING=0
for arg in "$@"; do
	case "$arg" in
	--update) UPDATE=1 ;;
	--merge) MERGE=1 ;;
	--keep-going) KEEP_GOING=1 ;;
	*) usage ;;
	esac
done
case "$SECONDS_EACH" in
'' | *[!0-9]*) usage ;;
esac

configure() {
	if [ ! -f "$BUILD/CMakeCache.txt" ] ||
		! grep -q '^HS_FUZZ:BOOL=ON' "$BUILD/CMakeCache.txt"; then
		mkdir -p "$BUILD"
		CC="${CC:-clang}" cmake -S "$ROOT" -B "$BUILD" \
			-DCMAKE_BUILD_TYPE=RelWithDebInfo -DHS_FUZZ=ON -DHS_WERROR=ON \
			>"$BUILD/configure.log" 2>&1 || {
			cat "$BUILD/configure.log" >&2
			exit 1
		}
	fi
}

run_one() {
	local name="$1"
	local bin="$BUILD/tests/fuzz_$name"
	local corpus="$FUZZ/corpus/$name"
	local scratch="$BUILD/fuzz-corpus/$name"
	local crashes="$BUILD/fuzz-crashes/$name"
	local log="$BUILD/fuzz-$name.log"
	if ! cmake --build "$BUILD" --target "fuzz_$name" -j"$(nproc)" >"$BUILD/build-$name.log" 2>&1; then
		if grep -q "No rule to make target\|unknown target" "$BUILD/build-$name.log"; then
			echo "fuzz_$name: not built here (see tests/fuzz.cmake); skipped"
			return 0
		fi
		cat "$BUILD/build-$name.log" >&2
		return 1
	fi
	mkdir -p "$corpus" "$scratch" "$crashes"
	local dirs=("$scratch" "$corpus")
	[ "$UPDATE" = 1 ] && dirs=("$corpus" "$scratch")
	local opts=(
		-max_total_time="$SECONDS_EACH"
		-timeout=10
		-rss_limit_mb=2048
		-malloc_limit_mb=4096
		-print_final_stats=1
		-artifact_prefix="$crashes/"
	)
	[ -f "$FUZZ/$name.dict" ] && opts+=(-dict="$FUZZ/$name.dict")
	# HS_FUZZ_SEED: libFuzzer's random seed, so that a run can be repeated
	# (CI sets it; a campaign leaves it unset for new paths each time)
	[ -n "${HS_FUZZ_SEED:-}" ] && opts+=(-seed="$HS_FUZZ_SEED")
	[ "$KEEP_GOING" = 1 ] &&
		opts+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
	local before
	before="$(find "$crashes" -type f ! -name 'slow-unit-*' | wc -l)"
	echo "==> fuzz_$name for $SECONDS_EACH s (corpus $corpus, new inputs in ${dirs[0]})"
	local status=0
	if [ "$SECONDS_EACH" = 0 ]; then
		: >"$log"  # merge only (-max_total_time=0 would not stop)
	else
		UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}" \
			"$bin" "${opts[@]}" "${dirs[@]}" >"$log" 2>&1 || status=$?
	fi
	local execs cov
	execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
	cov="$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)"
	local rate
	rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
	if [ -z "$execs" ]; then  # -fork=1 prints no final stats
		execs="$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -1)"
		rate="$(sed -n 's/^#[0-9]*: cov:.* exec\/s \([0-9]*\).*/\1/p' "$log" | tail -1)"
	fi
	echo "fuzz_$name: ${execs:-?} executions (${rate:-?}/s), ${cov:-cov: ?}; log $log"
	if [ "$MERGE" = 1 ]; then
		local tmp
		tmp="$(mktemp -d "$BUILD/merge-$name.XXXXXX")"
		"$bin" -merge=1 -use_counters=0 -use_value_profile=0 -timeout=10 \
			-rss_limit_mb=2048 -malloc_limit_mb=4096 \
			"$tmp" "$corpus" "$scratch" >"$BUILD/merge-$name.log" 2>&1
		# regression inputs (regress-*) stay whatever they cover, and
		# are not kept twice (merged files are named by their SHA-1)
		find "$corpus" -maxdepth 1 -type f -name 'regress-*' -exec sha1sum {} + |
			while read -r sum _; do rm -f "$tmp/$sum"; done
		find "$corpus" -maxdepth 1 -type f ! -name 'regress-*' -delete
		cp "$tmp"/* "$corpus"/ 2>/dev/null || true
		rm -rf "$tmp"
		echo "fuzz_$name: corpus merged: $(find "$corpus" -type f | wc -l) files, $(du -sk --apparent-size "$corpus" | cut -f1) KiB"
	fi
	# slow inputs (over 10 s: libFuzzer's -report_slow_units) are shown,
	# not failures
	find "$crashes" -type f -name 'slow-unit-*' -newer "$BUILD/build-$name.log" |
		sed "s/^/fuzz_$name: slow input (see tests\/fuzz\/findings\/README.md): /"
	local after
	after="$(find "$crashes" -type f ! -name 'slow-unit-*' | wc -l)"
	if [ "$status" -ne 0 ] || [ "$after" -gt "$before" ]; then
		echo "fuzz_$name: FAILED (exit $status); new files in $crashes:"
		find "$crashes" -type f -newer "$BUILD/build-$name.log" | sed 's/^/  /'
		grep -m1 -A30 'ERROR: \|runtime error\|==ERROR\|deadly signal' "$log" | head -40 || true
		return 1
	fi
}

mkdir -p "$BUILD"
configure
names=()
if [ "$WHICH" = all ]; then
	names=("${ALL[@]}")
else
	for n in "${ALL[@]}"; do
		[ "$n" = "$WHICH" ] && names=("$n")
	done
	[ ${#names[@]} = 1 ] || usage
fi
status=0
for n in "${names[@]}"; do
	run_one "$n" || status=1
done
exit "$status"
