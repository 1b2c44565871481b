# The large heap timed by scripts/bench-list.sh (not part of the test suite).
hs_fixture(bench_heap fixtures/bench_heap.c)
