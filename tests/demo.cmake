# The demo service used by scripts/demo.sh (not a test by itself).
hs_fixture(demo fixtures/demo.c)
