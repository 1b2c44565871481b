#!/usr/bin/env bash
# Build heapsift twice and run the whole test suite against both builds:
#   build/       the normal build (RelWithDebInfo, warnings are errors)
#   build-asan/  heapsift built with AddressSanitizer + UBSan; the fixture
#                programs are never sanitized (their heap must stay glibc's)
#
#   scripts/test.sh            both builds
#   scripts/test.sh normal     only build/
#   scripts/test.sh asan       only build-asan/
# Extra ctest arguments can be passed in CTEST_ARGS (e.g. "-R bad_input").
# Both trees replay the fuzzers' committed corpora (ctest fuzz_replay_*).
# HS_FUZZ_CI=1 also runs each libFuzzer harness for 60 s afterwards
# (scripts/fuzz.sh all 60, in build-fuzz/ with clang): a crash fails.
# HS_ROOTS=1 adds the test on Debian bullseye and trixie roots to build/
# (ctest "roots", -DHS_ROOTS=ON; docs/testing.md says what it costs).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="$(nproc)"
WHICH="${1:-all}"
read -r -a EXTRA <<<"${CTEST_ARGS:-}"

say() { printf '\n==> %s\n' "$*"; }

build() {
	local dir="$1"
	shift
	say "configure $dir $*"
	cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHS_WERROR=ON "$@"
	say "build $dir"
	cmake --build "$dir" -j"$JOBS"
}

run_ctest() {
	local dir="$1"
	say "ctest in $dir"
	# as many tests at once as there are processors; the ones that time
	# themselves (perf, snapshot) are RUN_SERIAL and run alone
	(cd "$dir" && ctest -j"$JOBS" --output-on-failure --no-tests=error "${EXTRA[@]}")
}

case "$WHICH" in
all | normal | asan) ;;
*)
	echo "usage: scripts/test.sh [all|normal|asan]" >&2
	exit 2
	;;
esac

status=0
failed_trees=()
case "$WHICH" in
all | normal)
	roots=OFF
	[ "${HS_ROOTS:-0}" = 1 ] && roots=ON
	build "$ROOT/build" -DHS_ROOTS="$roots"
	run_ctest "$ROOT/build" || { status=1; failed_trees+=("$ROOT/build"); }
	# the README's first command, end to end
	say "scripts/demo.sh"
	if "$ROOT/scripts/demo.sh" >"$ROOT/build/demo.log" 2>&1 &&
		grep -q "^LEAKED: [0-9]* blocks" "$ROOT/build/demo.log"; then
		echo "demo: ok (build/demo.log)"
	else
		echo "demo: FAILED, build/demo.log says:"
		tail -n 30 "$ROOT/build/demo.log"
		status=1
	fi
	;;
esac
case "$WHICH" in
all | asan)
	build "$ROOT/build-asan" -DHS_SANITIZE=ON
	ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}" \
	UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}" \
		run_ctest "$ROOT/build-asan" || { status=1; failed_trees+=("$ROOT/build-asan"); }
	;;
esac
if [ "${HS_FUZZ_CI:-0}" = 1 ]; then
	say "scripts/fuzz.sh all 60"
	"$ROOT/scripts/fuzz.sh" all 60 || status=1
fi
if [ "$status" -ne 0 ]; then
	# each failed test's FAIL lines again, last, where a log cut short
	# still has them
	if [ "${#failed_trees[@]}" -gt 0 ]; then
		python3 "$ROOT/scripts/lib/ctest_failures.py" "${failed_trees[@]}" || true
	fi
	say "FAILED (see the ctest output above)"
else
	say "all tests passed"
fi
exit "$status"
