# jemalloc programs (Debian's libjemalloc-dev): je_simple, read as
# jemalloc's heap and never glibc's idle one (test_other_allocator.py).
find_library(HS_JEMALLOC jemalloc)
if(HS_JEMALLOC)
  hs_fixture(je_simple fixtures/je_simple.c LIBS ${HS_JEMALLOC})
  hs_pytest(other_allocator test_other_allocator.py)

  # Ground truth for the jemalloc 5.3 walker (tests/fixtures/je_*.c with
  # the recorder tests/fixtures/je_record.c): test_jemalloc_truth.py
  # compares list, info and leaks with what each fixture recorded.
  set(HS_JE_FIXTURES je_threads je_arenas je_frag)
  foreach(fx ${HS_JE_FIXTURES})
    hs_fixture(${fx} fixtures/${fx}.c fixtures/je_record.c LIBS ${HS_JEMALLOC})
    target_compile_options(${fx} PRIVATE -Wall -Wextra -Werror)
  endforeach()
  hs_pytest(jemalloc_truth test_jemalloc_truth.py)
  # damaged jemalloc cores: one-line errors or warnings and partial results
  hs_pytest(jemalloc_bad test_jemalloc_bad.py)
endif()
