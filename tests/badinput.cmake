# Bad input: files that are not cores, usage errors, truncated cores, missing
# libc debug info, and cores with corrupted allocator metadata (made by
# tests/corrupt_core.py from the corruptme fixture).
hs_fixture(corruptme fixtures/corruptme.c)
hs_pytest(bad_input test_bad_input.py)
# Where files and debug info are found: default, --debug-dir, debuginfod,
# --exe, --sysroot.
hs_pytest(debuginfo test_debuginfo.py)
# Hostile input, round two: a corrupted statistic, FIFOs and devices as the
# core or named by it, output paths that are not regular files.
hs_pytest(hostile test_hostile.py)
