# heapsift summary, and heapdiff over summaries and cores, on snapshots of
# the phases fixture.
hs_pytest(summary test_summary.py)
