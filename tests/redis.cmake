# heapsift on a real jemalloc program: Debian 12's redis-server (it links the
# system libjemalloc2 5.3.0) under load, checked against jemalloc's own
# statistics and redis's.  Not conditional: without redis-server the test
# fails and says to run scripts/setup.sh, which installs it.
hs_pytest(jemalloc_redis test_jemalloc_redis.py)
