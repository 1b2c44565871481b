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
  # the same fixtures under other jemalloc options (MALLOC_CONF): no thread
  # caches; one arena and fewer cache bins; per-CPU arenas with immediate
  # purging.  (retain:false is left out: jemalloc then unmaps and maps
  # again, and a stale pointer the dynamic linker keeps to its unmapped
  # ld.so.cache can land on a leaked block: a conservative scan's honest
  # false positive, memcheck's too.)
  foreach(conf "tcache:false" "narenas:1,tcache_max:1024"
          "percpu_arena:percpu,dirty_decay_ms:0,muzzy_decay_ms:0")
    string(REGEX REPLACE "[^a-z0-9]+" "_" tag "${conf}")
    add_test(NAME jemalloc_conf_${tag}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_jemalloc_truth.py
              --conf ${conf})
    set_tests_properties(jemalloc_conf_${tag} PROPERTIES ENVIRONMENT "${HS_TEST_ENV}" TIMEOUT 600)
  endforeach()
  # damaged jemalloc cores: one-line errors or warnings and partial results
  hs_pytest(jemalloc_bad test_jemalloc_bad.py)

  # A program with its own static jemalloc built with -g and upstream's
  # configure defaults (scripts/jemalloc-debug-build.sh, run by
  # scripts/setup.sh): heapsift must take its layouts from DWARF (Debian's
  # table row, made for another configuration, would be wrong).
  set(HS_JEMALLOC_G "${CMAKE_SOURCE_DIR}/build/jemalloc-g" CACHE PATH
      "a static jemalloc with debug info (scripts/jemalloc-debug-build.sh)")
  if(EXISTS "${HS_JEMALLOC_G}/lib/libjemalloc.a")
    hs_fixture(je_threads_g fixtures/je_threads.c fixtures/je_record.c
               LIBS ${HS_JEMALLOC_G}/lib/libjemalloc.a dl m)
    target_include_directories(je_threads_g BEFORE PRIVATE ${HS_JEMALLOC_G}/include)
    target_compile_options(je_threads_g PRIVATE -Wall -Wextra -Werror)
    add_test(NAME jemalloc_dwarf
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_jemalloc_truth.py
              --dwarf je_threads_g)
    set_tests_properties(jemalloc_dwarf PROPERTIES ENVIRONMENT "${HS_TEST_ENV}" TIMEOUT 600)
    # the same program stripped: no DWARF, no symbols, a configuration no
    # table row has (test_jemalloc_bad.py: a clear refusal, never glibc)
    add_custom_command(TARGET je_threads_g POST_BUILD
      COMMAND ${CMAKE_STRIP} -o ${CMAKE_CURRENT_BINARY_DIR}/fixtures/je_threads_gs
              $<TARGET_FILE:je_threads_g>)
  else()
    add_test(NAME jemalloc_dwarf COMMAND sh -c
      "echo 'no ${HS_JEMALLOC_G}/lib/libjemalloc.a: run scripts/setup.sh (it builds it)'; exit 1")
  endif()
endif()
