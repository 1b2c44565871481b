# Ground-truth fixtures for the glibc heap walker (tests/fixtures/fx_*.c).
# Each fixture links the recorder (tests/fixtures/truth.c), builds a known
# heap, writes a JSON record to $HS_RECORD and stops itself with SIGSTOP;
# tests/test_glibc_truth.py takes a core with gcore and compares heapsift's
# view of the core with the record.  See tests/fixtures/truth.h.

set(HS_TRUTH_FIXTURES
  fx_sizes
  fx_tcache
  fx_fastbin
  fx_bins
  fx_mmap
  fx_realloc
  fx_threads
  fx_shared_arena
  fx_bigheap
  fx_tuned
  fx_noncontig
  fx_trim
  fx_nomalloc
)

foreach(fx ${HS_TRUTH_FIXTURES})
  hs_fixture(${fx} fixtures/${fx}.c fixtures/truth.c)
  # Fixtures must stay warning-free whatever HS_WERROR says.
  target_compile_options(${fx} PRIVATE -Wall -Wextra -Werror)
endforeach()

hs_pytest(glibc_truth test_glibc_truth.py)
# The test needs every fixture built, and the CLI under test.
set_tests_properties(glibc_truth PROPERTIES TIMEOUT 900)
# The same fixtures with libc's debug info hidden (--no-system-debug): the
# layout row and libc's code give the same heap (tests/test_nodebug.py).
hs_pytest(nodebug test_nodebug.py)
set_tests_properties(nodebug PROPERTIES TIMEOUT 1500)
# A heap that grew after fork(): two [heap] mappings that touch
# (tests/test_forked.py takes the child's core).
hs_fixture(fx_forked fixtures/fx_forked.c)
hs_pytest(forked test_forked.py)
