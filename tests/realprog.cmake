# Real programs from Debian (sqlite3, perl, lua5.4, python3) at a steady state: nothing
# leaked, "possible" under 1% of used bytes (tests/test_realprog.py).
hs_pytest(realprog test_realprog.py)

# rp_sqlite_host: a program embedding libsqlite3 that drops one malloc'ed
# block (a leak planted from outside sqlite); built when libsqlite3's
# headers are installed (scripts/setup.sh installs libsqlite3-dev)
find_path(HS_SQLITE3_INCLUDE sqlite3.h)
find_library(HS_SQLITE3_LIB sqlite3)
if(HS_SQLITE3_INCLUDE AND HS_SQLITE3_LIB)
  hs_fixture(rp_sqlite_host fixtures/rp_sqlite_host.c LIBS ${HS_SQLITE3_LIB})
  target_include_directories(rp_sqlite_host PRIVATE ${HS_SQLITE3_INCLUDE})
  target_compile_options(rp_sqlite_host PRIVATE -Wall -Wextra -Werror)
else()
  message(STATUS "No sqlite3.h: rp_sqlite_host is not built (test_realprog.py skips it)")
endif()

# rp_python_host: a program embedding CPython (libpython3.N.so); built
# when python3-embed's pkg-config file is installed (python3-dev)
pkg_check_modules(HS_PYEMBED QUIET python3-embed)
if(HS_PYEMBED_FOUND)
  hs_fixture(rp_python_host fixtures/rp_python_host.c LIBS ${HS_PYEMBED_LINK_LIBRARIES})
  target_include_directories(rp_python_host PRIVATE ${HS_PYEMBED_INCLUDE_DIRS})
  target_compile_options(rp_python_host PRIVATE -Wall -Wextra -Werror)
else()
  message(STATUS "No python3-embed: rp_python_host is not built (test_realprog.py skips it)")
endif()

# CPython's pymalloc and objects against the interpreter's own counts
# (tests/test_python.py, tests/fixtures/py_population.py)
hs_pytest(python test_python.py)
