#!/usr/bin/env python3
"""Peak anonymous memory of a command, sampled from /proc.

    peak_anon.py [--interval SECONDS] CMD...

Runs CMD (stdin and stdout /dev/null, stderr kept) and reads
/proc/PID/statm every INTERVAL seconds (default 0.0005) until it exits:
resident pages less the file-backed and shared ones is its anonymous
memory.  Prints one line on stdout:

    peak_anon_kib K samples S exit E allocations N bytes_per_alloc B

N is read from heapsift's --stats lines on CMD's stderr ("- " when there
are none).  CMD's stderr is copied to the file named by PEAK_ANON_STDERR
when it is set.

Why a sampler: the kernel keeps the peak of the resident set (VmHWM), but
not of its anonymous part.  heapsift maps the core and its debug files, so
the resident set mixes file pages that come and go with its own tables:
VmHWM less the file-backed memory at the end overstates the anonymous peak
by the debug files let go before the end.  A sample is a lower bound: a
peak shorter than the interval can be missed.  The poll costs a share of a
CPU, so time is measured in other runs (scripts/bench.sh).
"""
import os
import re
import subprocess
import sys
import time


def main(argv):
    interval = 0.0005
    if len(argv) >= 2 and argv[0] == "--interval":
        interval = float(argv[1])
        argv = argv[2:]
    if not argv:
        sys.stderr.write(__doc__)
        return 2
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    path = "/proc/%d/statm" % proc.pid
    peak = samples = 0
    # stderr is read at the end: --stats writes a few lines, far below a
    # pipe's buffer
    while proc.poll() is None:
        try:
            with open(path) as f:
                fields = f.read().split()
        except OSError:
            break
        if len(fields) >= 3:
            anon = (int(fields[1]) - int(fields[2])) * page_kib
            peak = max(peak, anon)
            samples += 1
        time.sleep(interval)
    err = proc.stderr.read().decode(errors="replace")
    rc = proc.wait()
    dest = os.environ.get("PEAK_ANON_STDERR")
    if dest:
        with open(dest, "w") as f:
            f.write(err)
    m = re.search(r"^heapsift: stats: (\d+) allocations", err, re.M)
    n = int(m.group(1)) if m else 0
    bpa = "%.1f" % (peak * 1024 / n) if n else "-"
    print("peak_anon_kib %d samples %d exit %d allocations %s bytes_per_alloc %s"
          % (peak, samples, rc, n if n else "-", bpa))
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
