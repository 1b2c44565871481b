# What a hostile core's strings do to the output: escaped text on stdout and
# stderr, strict UTF-8 JSON, pprof strings, folded stacks, the HTML page's
# JSON (tests/test_escaping.py, on a patched corruptme core).
hs_pytest(escaping test_escaping.py)
