# Real programs from Debian (sqlite3, perl, lua5.4, python3) at a steady state: nothing
# leaked, "possible" under 1% of used bytes (tests/test_realprog.py).
hs_pytest(realprog test_realprog.py)
