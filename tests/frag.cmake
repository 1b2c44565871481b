# Fragmentation and footprint against a heap of known shape.
hs_fixture(fragment fixtures/fragment.c)
hs_pytest(frag test_frag.py)
