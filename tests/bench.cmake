# The large heap timed by scripts/bench.sh.
hs_fixture(bench_heap fixtures/bench_heap.c)

# Progress lines on a terminal, on a 300,000-block core of it (tests/test_progress.py).
hs_pytest(progress test_progress.py)
