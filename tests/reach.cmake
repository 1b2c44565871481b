# Reachability fixtures (tests/fixtures/rc_*.c): each keeps allocations in
# one kind of root, or leaks them in a known shape, records what it made
# with tests/fixtures/reach_record.c and stops itself.  test_reach.py
# compares heapsift's leak classes, leak roots and `show` with the record;
# test_memcheck_crosscheck.py runs the same binaries under valgrind, where
# they run memcheck's leak check at the stop point instead of stopping.

set(HS_REACH_FIXTURES
  rc_global
  rc_interior
  rc_stack
  rc_regs
  rc_tls
  rc_pool
  rc_leaks
  rc_exited
  rc_rules
)

foreach(fx ${HS_REACH_FIXTURES})
  hs_fixture(${fx} fixtures/${fx}.c fixtures/reach_record.c)
  target_compile_options(${fx} PRIVATE -Wall -Wextra -Werror)
endforeach()

# rc_lib: variables of a linked library and of a dlopen()ed one.
add_library(rc_shared SHARED fixtures/rc_lib_shared.c)
add_library(rc_dl MODULE fixtures/rc_lib_dl.c)
foreach(lib rc_shared rc_dl)
  set_target_properties(${lib} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fixtures)
  target_compile_options(${lib} PRIVATE -O1 -g -fno-omit-frame-pointer
    -Wall -Wextra -Werror)
endforeach()
hs_fixture(rc_lib fixtures/rc_lib.c fixtures/reach_record.c
  LIBS rc_shared ${CMAKE_DL_LIBS})
target_compile_options(rc_lib PRIVATE -Wall -Wextra -Werror)
target_compile_definitions(rc_lib PRIVATE RC_DL_PATH="$<TARGET_FILE:rc_dl>")
add_dependencies(rc_lib rc_dl)

hs_pytest(reach test_reach.py)
hs_pytest(memcheck_crosscheck test_memcheck_crosscheck.py)
# No valgrind or no <valgrind/memcheck.h>: the cross-check says why and
# exits 77.
set_tests_properties(memcheck_crosscheck PROPERTIES SKIP_RETURN_CODE 77)
