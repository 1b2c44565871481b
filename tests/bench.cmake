# The large heap timed by scripts/bench.sh.
hs_fixture(bench_heap fixtures/bench_heap.c)

# Progress lines on a terminal, on a 300,000-block core of it (tests/test_progress.py).
hs_pytest(progress test_progress.py)

# Speed regression check (tests/test_perf.py): phases of leaks on a
# 1,000,000-block core, as ratios to a fixed reference computation, against
# tests/perf-baseline.json.  Not under a sanitizer.
hs_fixture(perf_ref fixtures/perf_ref.c)
if(NOT HS_SANITIZE)
  hs_pytest(perf test_perf.py)
  # alone: a test running beside it would be measured too
  set_tests_properties(perf PROPERTIES RUN_SERIAL TRUE)
endif()

# scripts/bench-scale.sh at two tiny sizes, so that the script that makes
# the 10^6..10^8 tables keeps working (tests/test_bench_scripts.py).
hs_pytest(bench_scripts test_bench_scripts.py)
