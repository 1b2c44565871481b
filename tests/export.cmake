# pprof and folded stacks against top and leaks.
hs_pytest(export test_export.py)
