# heapsift snapshot (src/live.c): a core of a live process.
# tests/fixtures/fx_snapshot.c is a service with a heap of a given size, a
# thread that measures the pause from inside, one asleep in nanosleep and
# one in read(2).  test_snapshot.py compares snapshots (fork and no-fork)
# with gcore, measures the pause, kills heapsift mid-way and checks the
# refusals.  HS_SNAPSHOT_BIG=1 adds a 2 GiB heap.

hs_fixture(fx_snapshot fixtures/fx_snapshot.c)
target_compile_options(fx_snapshot PRIVATE -Wall -Wextra -Werror)

hs_pytest(snapshot test_snapshot.py)
# RUN_SERIAL: the pause is measured; a test running beside it on the
# same CPUs would stretch it
set_tests_properties(snapshot PROPERTIES TIMEOUT 1200 RUN_SERIAL TRUE)
