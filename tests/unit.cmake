# C unit tests of the library; they link heapsift_core, so the sanitizer
# build runs them under ASan+UBSan too.
foreach(t test_dominators test_trend test_escape test_containers test_fmt test_summary test_sort test_edgerow
    test_seccomp)
  add_executable(${t} ${CMAKE_CURRENT_SOURCE_DIR}/unit/${t}.c)
  target_link_libraries(${t} PRIVATE heapsift_core)
  add_test(NAME unit_${t} COMMAND ${t})
endforeach()

# Unit tests on synthetic cores (tests/unit/mockcore.h).
foreach(t test_elfcore test_backend test_glibc test_jemalloc test_pymalloc)
  add_executable(${t} ${CMAKE_CURRENT_SOURCE_DIR}/unit/${t}.c
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/mockcore.c)
  target_link_libraries(${t} PRIVATE heapsift_core)
  add_test(NAME unit_${t} COMMAND ${t})
endforeach()
# the hand-built glibc heap (tests/unit/glibc_heap.h)
target_sources(test_glibc PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit/glibc_heap.c)
# the hand-built pymalloc pools (tests/unit/pymalloc_pools.h)
target_sources(test_pymalloc PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit/pymalloc_pools.c)
# the hand-built jemalloc heap (tests/unit/jemalloc_heap.h)
target_sources(test_jemalloc PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit/jemalloc_heap.c)

# src/alloc.h's rounding, which the sanitized builds leave out.
if(NOT HS_SANITIZE)
  add_executable(test_alloc ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_alloc.c)
  target_link_libraries(test_alloc PRIVATE heapsift_core)
  add_test(NAME unit_test_alloc COMMAND test_alloc)
endif()
