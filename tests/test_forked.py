#!/usr/bin/env python3
"""A heap that grew after fork(): every block of the child, no warning.

tests/fixtures/fx_forked.c: the parent makes 1,000 blocks and forks; the
child makes 300,000 more, records every block it can reach, its [heap]
mappings and its mallinfo2(), and stops.  The child's core is taken with
gcore.  Two runs:
  - brk: the child's brk heap grows past what it inherited;
  - nobrk: the child first blocks its program break, so that the main
    arena continues in mmapped pieces (non-contiguous).
Checks, for each:
  - the fixture's premise (a test of the fixture, not of heapsift): brk:
    the child's heap is two or more [heap] mappings that touch; nobrk:
    most of the child's blocks lie outside its [heap] mappings;
  - `list --raw --format json`: every recorded block is listed, in use;
  - `info`: mallinfo2 equal to the child's own;
  - no warning, not partial, nothing unaccounted.

Standard library only.  Prints "N passed, M failed" last.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "forked")
R = hstest.Checker()
MALLINFO2 = ("arena", "ordblks", "hblks", "hblkhd", "uordblks", "fordblks", "keepcost")


def take(mode):
    """Run the fixture, core its stopped child; (core, record lines) or None."""
    rec = os.path.join(WORK, "fx_forked-%s.rec" % mode)
    env = dict(os.environ, HS_RECORD=rec)
    argv = [os.path.join(hstest.FIXTURES, "fx_forked")] + (["nobrk"] if mode == "nobrk" else [])
    parent = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL)
    child = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if os.path.exists(rec) and hstest.proc_state(parent.pid) in ("S", "T"):
                lines = open(rec).read().splitlines()
                kids = [ln.split()[1] for ln in lines if ln.startswith("child ")]
                if kids and hstest.proc_state(int(kids[0])) == "T":
                    child = int(kids[0])
                    break
            if parent.poll() is not None:
                break
            time.sleep(0.1)
        if child is None:
            R.case("%s: the child stops" % mode, ["no stopped child within 120 s (parent exit %s)"
                                                 % parent.poll()])
            return None
        try:
            core = hstest.gcore(child, os.path.join(WORK, "child-" + mode),
                                what="the %s child" % mode)
        except hstest.HsError as e:
            R.case("%s: gcore the child" % mode, [str(e)])
            return None
        return core, open(rec).read().splitlines()
    finally:
        for pid in (child, parent.pid):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        parent.wait()


def check(mode, core, lines):
    heaps = sorted(tuple(int(x, 16) for x in ln.split()[1:]) for ln in lines
                   if ln.startswith("heap "))
    blocks = [int(ln.split()[1], 16) for ln in lines if ln.startswith("block ")]
    mi = [ln.split()[1:] for ln in lines if ln.startswith("mallinfo2 ")]
    want_mi = dict(zip(MALLINFO2, map(int, mi[0]))) if mi else None
    if mode == "brk":
        touching = len(heaps) >= 2 and all(heaps[i][1] == heaps[i + 1][0]
                                           for i in range(len(heaps) - 1))
        R.case("brk: fixture: the child's heap is %d [heap] mappings that touch" % len(heaps),
               [] if touching else ["[heap] mappings: %s" % [(hex(a), hex(b)) for a, b in heaps]])
    else:
        outside = sum(1 for b in blocks if not any(lo <= b < hi for lo, hi in heaps))
        R.case("nobrk: fixture: most blocks are outside [heap] (%d of %d)" % (outside, len(blocks)),
               [] if outside > len(blocks) // 2 else ["only %d outside" % outside])

    r = hstest.run([HS, "list", core, "--raw", "--format", "json"], timeout=600)
    if r.rc != 0:
        R.case("%s: list runs" % mode, [r.describe()])
        return
    doc = json.loads(r.out)
    used = {int(a["address"], 16) for a in doc["allocations"] if a["state"] == "used"}
    missing = [b for b in blocks if b not in used]
    R.case("%s: list: every one of the child's %d blocks, in use" % (mode, len(blocks)),
           ["%d of %d recorded blocks not listed in use, first %#x"
            % (len(missing), len(blocks), missing[0])] if missing else [])
    probs = []
    if doc.get("partial") or doc.get("unaccounted_bytes"):
        probs.append("partial %r, unaccounted_bytes %r" % (doc.get("partial"),
                                                           doc.get("unaccounted_bytes")))
    if doc.get("warnings") or "warning" in r.err:
        probs.append("warnings: %r %r" % (doc.get("warnings", [])[:3], r.err[:300]))
    R.case("%s: list: not partial, no warning" % mode, probs)

    r = hstest.run([HS, "info", core, "--format", "json"], timeout=600)
    probs = []
    if r.rc != 0:
        probs.append(r.describe())
    elif want_mi is None:
        probs.append("the fixture recorded no mallinfo2")
    else:
        got = json.loads(r.out).get("allocator", {}).get("mallinfo2") or {}
        diff = {k: (got.get(k), v) for k, v in want_mi.items() if got.get(k) != v}
        if diff:
            probs.append("mallinfo2 (heapsift, child): %s" % diff)
    R.case("%s: info: mallinfo2 equal to the child's" % mode, probs)


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    for mode in ("brk", "nobrk"):
        got = take(mode)
        if got:
            check(mode, *got)
    status = R.finish()
    if status == 0:
        shutil.rmtree(WORK, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
