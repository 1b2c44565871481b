# heapdiff over snapshots of the phases fixture.
hs_pytest(diff test_diff.py)
