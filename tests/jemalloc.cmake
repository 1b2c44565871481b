# A jemalloc program: a clear "not supported yet", never glibc's idle heap
# instead (Debian's libjemalloc-dev).
find_library(HS_JEMALLOC jemalloc)
if(HS_JEMALLOC)
  hs_fixture(je_simple fixtures/je_simple.c LIBS ${HS_JEMALLOC})
  hs_pytest(other_allocator test_other_allocator.py)
endif()
