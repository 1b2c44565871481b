#!/usr/bin/env bash
# heapsift and chap side by side on cores of real programs (Debian's
# packages), the shapes of issue-sized heaps that bench_heap does not have:
#
#   lua     lua5.4, a table of N entries, each a table {i, tostring(i)}
#   perl    perl, a hash of N/2 keys "kI" to [I, "vI"]
#   python  python3 with PYTHONMALLOC=malloc, a dict of N entries i -> (i, str(i))
#
# Each program builds its data, says "ready", and waits on stdin; gcore
# takes its core (build/bench/real/NAME.core).  Then `heapsift leaks` (best
# of BENCH_RUNS, default 3: wall, user, peak RSS and --stats) and, with
# BENCH_CHAP (scripts/build-chap.sh prints its path), `chap` answering
# "count leaked" the same way; the ratio heapsift / chap is printed.
# ANON_B: the peak of heapsift's anonymous memory per allocation, in one
# more run of `leaks` sampled by scripts/lib/peak_anon.py.
# Not part of the test suite.
#
#   scripts/bench-real.sh [N] [NAME...]      N default 1000000
#   BENCH_CORES=reuse ...                    keep cores from an earlier run
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HS_BUILD_DIR:-$ROOT/build}"
HS="$BUILD/heapsift"
OUT="$BUILD/bench/real"
N="${1:-1000000}"
shift || true
NAMES=("$@")
[ ${#NAMES[@]} -gt 0 ] || NAMES=(lua perl python)
RUNS="${BENCH_RUNS:-3}"
CHAP="${BENCH_CHAP:-}"
mkdir -p "$OUT"
say() { printf '==> %s\n' "$*"; }
# shellcheck source-path=SCRIPTDIR source=lib/bench-common.sh
. "$ROOT/scripts/lib/bench-common.sh"

program() {
	case "$1" in
	lua) echo "lua5.4 -e 'local t = {} for i = 1, $N do t[i] = {i, tostring(i)} end print(\"ready\") io.stdout:flush() io.read()'" ;;
	perl) echo "perl -e '\$| = 1; my %h; \$h{\"k\$_\"} = [\$_, \"v\$_\"] for 1 .. $((N / 2)); print \"ready\\n\"; <STDIN>;'" ;;
	python) echo "PYTHONMALLOC=malloc /usr/bin/python3 -c 'import sys; d = {i: (i, str(i)) for i in range($N)}; print(\"ready\", flush=True); sys.stdin.read()'" ;;
	*) echo "bench-real.sh: unknown program $1" >&2; exit 2 ;;
	esac
}

take_core() {
	local name="$1" core="$OUT/$1.core" fifo="$OUT/$1.fifo"
	if [ "${BENCH_CORES:-}" = reuse ] && [ -s "$core" ]; then
		return
	fi
	rm -f "$core" "$fifo"
	mkfifo "$fifo"
	say "running $name ($N)"
	# the fifo held open for writing keeps the program's stdin waiting
	exec 9<>"$fifo"
	sh -c "$(program "$name")" <"$fifo" >"$OUT/$name.out" 2>&1 &
	local pid=$!
	for _ in $(seq 1 600); do
		grep -q ready "$OUT/$name.out" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || { echo "$name exited early" >&2; cat "$OUT/$name.out" >&2; exit 1; }
		sleep 0.5
	done
	# the program itself, not the shell around it
	local child
	child="$(pgrep -P "$pid" | head -1)"
	child="${child:-$pid}"
	gcore -o "$OUT/$name.gcore" "$child" >"$OUT/$name.gcore.log" 2>&1
	mv "$OUT/$name.gcore.$child" "$core"
	bench_evict "$core"
	exec 9>&-
	kill "$pid" "$child" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$fifo"
}

printf '%-8s %10s %8s %10s %9s %9s %7s %10s %9s %7s\n' PROGRAM CORE_MB BLOCKS HS_WALL HS_USER HS_MB ANON_B CHAP_WALL CHAP_MB RATIO
for name in "${NAMES[@]}"; do
	take_core "$name"
	core="$OUT/$name.core"
	bench_best_of "$name" "$HS" leaks "$core" --stats
	hw="$(printf '%.2f' "$BEST_WALL")" hu="$BEST_USER" hr="$BEST_RSS"
	stats="$(grep '^heapsift: stats:' "$OUT/$name.err" | head -2 | tr '\n' ' ')"
	blocks="$(grep -oE '[0-9]+ allocations' "$OUT/$name.err" | head -1 | cut -d' ' -f1)"
	read -r _ _ _ _ _ _ _ _ _ anonb < <(python3 "$ROOT/scripts/lib/peak_anon.py" "$HS" leaks "$core" --stats)
	cw="-" cr="-" ratio="-"
	if [ -n "$CHAP" ]; then
		bench_best_of "$name-chap" sh -c 'echo "count leaked" | "$1" "$2"' sh "$CHAP" "$core"
		cw="$(printf '%.2f' "$BEST_WALL")" cr="$BEST_RSS"
		ratio="$(awk -v h="$hw" -v c="$cw" 'BEGIN { printf "%.2f", h / c }')"
		cr="$(awk -v r="$cr" 'BEGIN { printf "%.0f", r / 1024 }')"
	fi
	printf '%-8s %10.0f %8s %10s %9s %9.0f %7s %10s %9s %7s\n' "$name" \
		"$(stat -c %s "$core" | awk '{ print $1 / 1048576 }')" "${blocks:-?}" "$hw" "$hu" \
		"$(awk -v r="$hr" 'BEGIN { print r / 1024 }')" "$anonb" "$cw" "$cr" "$ratio"
	echo "  $stats"
done
