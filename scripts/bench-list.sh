#!/usr/bin/env bash
# Time heapsift list and info on the big core of tests/fixtures/bench_heap.c:
# scripts/bench.sh with BENCH_COMMANDS="list info" (see there for the
# arguments and the variables).  Not part of the test suite.
#
#   scripts/bench-list.sh [N_LIVE] [FIXTURE_THREADS]
set -euo pipefail
BENCH_COMMANDS="${BENCH_COMMANDS:-list info}" exec bash "$(dirname "${BASH_SOURCE[0]}")/bench.sh" "$@"
