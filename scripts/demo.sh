#!/usr/bin/env bash
# Show heapsift on a live example: set up (if needed), run the demo service
# (tests/fixtures/demo.c) until it stops itself, take its core with gcore,
# and look at the core with `heapsift info`, `leaks`, `show` and `list`.
#
#   scripts/demo.sh [N_SESSIONS]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HS_BUILD_DIR:-$ROOT/build}"
HS="$BUILD/heapsift"
DEMO="$BUILD/tests/fixtures/demo"
OUT="$BUILD/demo"
N_SESSIONS="${1:-2000}"

say() { printf '\n==> %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; }

if [ ! -x "$HS" ] || ! command -v gcore >/dev/null 2>&1; then
	say "heapsift is not built yet: running scripts/setup.sh"
	bash "$ROOT/scripts/setup.sh"
fi
say "bringing heapsift and the demo program up to date"
show "cmake --build $BUILD --target heapsift demo"
cmake --build "$BUILD" --target heapsift demo >"$BUILD/demo-build.log" 2>&1 || {
	cat "$BUILD/demo-build.log" >&2
	exit 1
}

mkdir -p "$OUT"
rm -f "$OUT"/demo.core "$OUT"/demo.core.*

say "starting the demo service ($N_SESSIONS sessions); it stops itself with SIGSTOP"
show "$DEMO $N_SESSIONS &"
"$DEMO" "$N_SESSIONS" &
PID=$!
cleanup() {
	kill -KILL "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
}
trap cleanup EXIT

# Wait for state T in /proc/PID/stat (the field after the parenthesised name).
state=""
for _ in $(seq 1 300); do
	if [ ! -r "/proc/$PID/stat" ]; then
		echo "demo.sh: the demo exited before stopping" >&2
		exit 1
	fi
	stat="$(cat "/proc/$PID/stat")"
	state="$(printf '%s' "${stat##*) }" | cut -d' ' -f1)"
	[ "$state" = T ] && break
	sleep 0.1
done
if [ "$state" != T ]; then
	echo "demo.sh: the demo did not stop within 30 s (state $state)" >&2
	exit 1
fi
echo "pid $PID is stopped"

say "taking a core with gcore"
show "gcore -o $OUT/demo.core $PID"
gcore -o "$OUT/demo.core" "$PID" >"$OUT/gcore.log" 2>&1 || {
	cat "$OUT/gcore.log" >&2
	echo "demo.sh: gcore failed" >&2
	exit 1
}
mv "$OUT/demo.core.$PID" "$OUT/demo.core"
ls -lh "$OUT/demo.core"

say "stopping the demo"
show "kill -KILL $PID"
cleanup
trap - EXIT

CORE="$OUT/demo.core"
say "what is in the core"
show "heapsift info $CORE"
"$HS" info "$CORE"

say "is it a leak, and how much?"
show "heapsift leaks $CORE"
"$HS" leaks "$CORE"
FIRST_LEAK="$("$HS" leaks --list "$CORE" | awk '/^ *0x[0-9a-f]+ holds/ && !f { print $1; f = 1 }')"  # awk reads it all: no SIGPIPE
if [ -n "$FIRST_LEAK" ]; then
	say "one leaked block: who points to it, what it points to"
	show "heapsift show $CORE $FIRST_LEAK"
	"$HS" show "$CORE" "$FIRST_LEAK"
fi

say "the first allocations, used and free"
show "heapsift list --state all $CORE | head -n 20"
"$HS" list --state all "$CORE" >"$OUT/list.txt"
head -n 20 "$OUT/list.txt"
echo "... ($(wc -l <"$OUT/list.txt") lines in all, saved in $OUT/list.txt)"

say "done; try also:"
echo "  $HS list --state used --min-size 1024 $CORE"
echo "  $HS info --format json $CORE"
