# The glibc fixtures built and run inside Debian roots of other releases,
# bullseye (glibc 2.31) and trixie (glibc 2.41), made and cached by
# scripts/roots.sh (tests/test_roots.py).  Slow, needs root and, the first
# time, the network: registered only when asked, with -DHS_ROOTS=ON
# (scripts/test.sh passes it when HS_ROOTS=1).
option(HS_ROOTS "Register the test on Debian bullseye and trixie roots (scripts/roots.sh; needs root and the network on first use)" OFF)
if(HS_ROOTS)
  hs_pytest(roots test_roots.py)
  set_tests_properties(roots PROPERTIES TIMEOUT 3600)
endif()
