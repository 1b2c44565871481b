# Fuzz harnesses (tests/fuzz/; docs/testing.md, "Fuzzing").
#
# Every harness builds against a small replay main (tests/fuzz/replay.c, no
# libFuzzer, any compiler) into fuzz_replay_NAME, and ctest replays the
# committed corpus tests/fuzz/corpus/NAME with it: in the normal build and
# under ASan+UBSan (HS_SANITIZE), a crash or a sanitizer report fails.
# With HS_FUZZ=ON (clang) the libFuzzer harnesses fuzz_NAME are built too;
# scripts/fuzz.sh runs them.
set(HS_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
set(HS_FUZZ_NAMES core notes dwarf glibc glibc_mock jemalloc_mock pymalloc_mock summary)
# the jemalloc walker's base core needs Debian's libjemalloc2 (the library
# the core names, read for its code and TLS relocations)
find_library(HS_JEMALLOC jemalloc)
if(HS_JEMALLOC)
  list(APPEND HS_FUZZ_NAMES jemalloc)
endif()

foreach(name ${HS_FUZZ_NAMES})
  set(src ${HS_FUZZ_DIR}/fuzz_${name}.c)
  if(name STREQUAL "glibc" OR name STREQUAL "jemalloc")
    list(APPEND src ${HS_FUZZ_DIR}/fz_base.c)
  endif()
  if(name MATCHES "^(glibc|jemalloc|pymalloc)")
    # the walkers' harnesses: checks of the heap, the mocks' word patches
    list(APPEND src ${HS_FUZZ_DIR}/fz_heap.c)
  endif()
  if(name STREQUAL "notes")
    # the ELF header of its cores (tests/unit/mockcore.h)
    list(APPEND src ${CMAKE_CURRENT_SOURCE_DIR}/unit/mockcore.c)
  endif()
  if(name STREQUAL "glibc_mock")
    # the hand-built heap of the unit tests (tests/unit/glibc_heap.h)
    list(APPEND src ${CMAKE_CURRENT_SOURCE_DIR}/unit/mockcore.c
      ${CMAKE_CURRENT_SOURCE_DIR}/unit/glibc_heap.c)
  endif()
  if(name STREQUAL "pymalloc_mock")
    # the hand-built pools of the unit tests (tests/unit/pymalloc_pools.h)
    list(APPEND src ${CMAKE_CURRENT_SOURCE_DIR}/unit/mockcore.c
      ${CMAKE_CURRENT_SOURCE_DIR}/unit/pymalloc_pools.c)
  endif()
  if(name STREQUAL "jemalloc_mock")
    # the hand-built heap of the unit tests (tests/unit/jemalloc_heap.h);
    # no libjemalloc needed
    list(APPEND src ${CMAKE_CURRENT_SOURCE_DIR}/unit/mockcore.c
      ${CMAKE_CURRENT_SOURCE_DIR}/unit/jemalloc_heap.c)
  endif()
  add_executable(fuzz_replay_${name} ${src} ${HS_FUZZ_DIR}/replay.c)
  target_link_libraries(fuzz_replay_${name} PRIVATE heapsift_core)
  target_compile_definitions(fuzz_replay_${name} PRIVATE
    HS_FUZZ_BASE_DIR="${HS_FUZZ_DIR}/base")
  add_test(NAME fuzz_replay_${name}
    COMMAND fuzz_replay_${name} ${HS_FUZZ_DIR}/corpus/${name})
  set_tests_properties(fuzz_replay_${name} PROPERTIES TIMEOUT 600)
  if(HS_FUZZ)
    add_executable(fuzz_${name} ${src})
    target_link_libraries(fuzz_${name} PRIVATE heapsift_core)
    target_compile_definitions(fuzz_${name} PRIVATE
      HS_FUZZ_BASE_DIR="${HS_FUZZ_DIR}/base")
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  endif()
endforeach()

if(HS_FUZZ)
  # the library's objects depend on the coverage ignore list (its flag,
  # set in the top CMakeLists.txt, names the file, not its content)
  get_target_property(hs_core_sources heapsift_core SOURCES)
  set(hs_core_paths)
  foreach(s ${hs_core_sources})
    if(NOT IS_ABSOLUTE ${s})
      set(s ${CMAKE_SOURCE_DIR}/${s})
    endif()
    list(APPEND hs_core_paths ${s})
  endforeach()
  set_source_files_properties(${hs_core_paths} DIRECTORY ${CMAKE_SOURCE_DIR}
    PROPERTIES OBJECT_DEPENDS ${HS_FUZZ_DIR}/coverage-ignore.txt)
endif()
