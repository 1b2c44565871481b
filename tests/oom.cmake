# Out of memory: every allocation heapsift's own code makes fails in turn
# (a preloaded library, never sanitized; the test skips a sanitized
# heapsift, whose allocator must come first).
add_library(failalloc SHARED fixtures/failalloc.c)
set_target_properties(failalloc PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fixtures PREFIX "")
target_compile_options(failalloc PRIVATE -O1 -g)
target_link_libraries(failalloc PRIVATE ${CMAKE_DL_LIBS})
hs_pytest(oom test_oom.py)
