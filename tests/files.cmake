# stdio streams (tests/fixtures/fx_files.c): 50 fopen'ed streams, 40 kept
# in a global and 10 leaked, and a run that damages libc's list of streams
# and a descriptor.  test_files.py compares `files` and `leaks` with the
# fixture's record.

hs_fixture(fx_files fixtures/fx_files.c)
target_compile_options(fx_files PRIVATE -Wall -Wextra -Werror)

hs_pytest(files test_files.py)
