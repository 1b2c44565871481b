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

# hs_dwarf_layout_in_unit on a program of two units that define one
# struct (tests/unit/layout_units/): built -O0 -g, without sanitizers, as
# the fixtures are; it is read, never run.
add_executable(layout_units_data ${CMAKE_CURRENT_SOURCE_DIR}/unit/layout_units/first.c
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/layout_units/malloc.c)
target_compile_options(layout_units_data PRIVATE -O0 -g)
add_executable(test_layout_units ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_layout_units.c)
target_link_libraries(test_layout_units PRIVATE heapsift_core)
add_test(NAME unit_test_layout_units
  COMMAND test_layout_units $<TARGET_FILE:layout_units_data>)
