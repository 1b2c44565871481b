#!/usr/bin/env python3
"""A core of a program whose malloc is jemalloc: heapsift reads jemalloc's
heap, never glibc's.

Its process also has glibc, with a main_arena that malloc never used:
walking that would report an empty heap as if it were the program's.  The
fixture (je_simple) makes 100 blocks of 100..199 bytes with jemalloc's
malloc.  `info` must name jemalloc, `list` must list the 100 blocks as
used small regions (usable sizes 112..224, jemalloc's classes), `leaks` and
`top` must work; `frag` must give jemalloc's size classes.  (tests/test_jemalloc_truth.py checks jemalloc heaps exactly.)
Prints "N passed, M failed" last.
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "other_allocator")
R = hstest.Checker()


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    core = hstest.take_core("je_simple", WORK, "je", record=False).core

    r = hstest.run([HS, "info", core, "--format", "json"], timeout=120)
    problems = []
    if r.rc != 0:
        problems.append("exit %d: %s" % (r.rc, r.err))
    else:
        a = json.loads(r.out)["allocator"]
        if a.get("name") != "jemalloc" or not a.get("version", "").startswith("5."):
            problems.append("allocator: %s" % {k: a.get(k) for k in ("name", "version", "error")})
    R.case("info: the allocator is jemalloc 5.x", problems)

    r = hstest.run([HS, "list", core, "--format", "json"], timeout=120)
    problems = []
    if r.rc != 0:
        problems.append("exit %d: %s" % (r.rc, r.err))
    else:
        d = json.loads(r.out)
        small = [a for a in d["allocations"] if a["where"] == "small" and 112 <= a["size"] <= 224]
        if d["allocator"] != "jemalloc":
            problems.append("allocator %s" % d["allocator"])
        if len(small) < 100:
            problems.append("%d used small regions of 112..224 bytes, expected at least 100" % len(small))
        if any("chunk" in a for a in d["allocations"]):
            problems.append("jemalloc blocks have no chunk header, yet a 'chunk' key is listed")
    R.case("list: the fixture's 100 blocks as jemalloc small regions", problems)

    for cmd in (["leaks"], ["top"]):
        r = hstest.run([HS] + cmd + [core], timeout=120)
        R.case("%s: works on a jemalloc heap" % cmd[0],
               [] if r.rc == 0 else ["exit %d: %s" % (r.rc, r.err)])

    r = hstest.run([HS, "frag", core, "--format", "json"], timeout=120)
    problems = []
    if r.rc != 0:
        problems.append("exit %d: %s" % (r.rc, r.err))
    else:
        d = json.loads(r.out)
        sizes = {c["size"] for c in d["heap"].get("classes", [])}
        if not {112, 128, 160, 192, 224} <= sizes:
            problems.append("size classes %s lack 112..224" % sorted(sizes))
        if "mmap_threshold" in d["requests"]:
            problems.append("glibc's mmap_threshold reported for jemalloc")
    R.case("frag: jemalloc's size classes, no glibc notions", problems)
    tcmalloc(R)
    return R.finish()


TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"


def tcmalloc(R):
    """A glibc program run on tcmalloc (LD_PRELOAD, Debian's
    libtcmalloc-minimal4): list, leaks and top refuse in one line naming
    tcmalloc and its build-id; info works and says the same."""
    if not os.path.exists(TCMALLOC):
        R.case("tcmalloc: %s installed" % TCMALLOC, ["missing: run scripts/setup.sh"])
        return
    core = hstest.take_core("rc_global", WORK, "tc", record=False, preload=TCMALLOC).core
    for cmd in (["list"], ["leaks"], ["top"]):
        r = hstest.run([HS] + cmd + [core], timeout=120)
        lines = [ln for ln in r.err.splitlines() if ln.strip()]
        ok = r.rc == 1 and len(lines) == 1 and "tcmalloc" in lines[0] and "build-id" in lines[0]
        R.case("tcmalloc: %s: one line naming tcmalloc, exit 1" % cmd[0],
               [] if ok else ["exit %d, stderr %r" % (r.rc, r.err)])
    r = hstest.run([HS, "info", core, "--format", "json"], timeout=120)
    a = json.loads(r.out)["allocator"] if r.rc == 0 else {}
    R.case("tcmalloc: info works and its allocator says tcmalloc",
           [] if a.get("name") is None and "tcmalloc" in a.get("error", "") else
           ["exit %d, allocator %s" % (r.rc, a)])


if __name__ == "__main__":
    sys.exit(main())
