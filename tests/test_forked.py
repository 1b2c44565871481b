#!/usr/bin/env python3
"""A heap that grew after fork(): every block of the child, no warning.

tests/fixtures/fx_forked.c: the parent makes 1,000 blocks and forks; the
child makes 300,000 more, records every block it can reach and its [heap]
mappings, and stops.  The child's core is taken with gcore.  Checks:
  - the fixture's premise: the child's brk heap is two or more [heap]
    mappings that touch (a test of the fixture, not of heapsift);
  - `list --raw --format json`: every recorded block is listed, in use;
  - no warning, not partial.

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

import badinput_util as u  # noqa: E402

P = u.paths()
HS = P["heapsift"]
WORK = os.path.join(P["workdir"], "forked")
R = u.Results()


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    rec = os.path.join(WORK, "fx_forked.rec")
    env = dict(os.environ, HS_RECORD=rec)
    parent = subprocess.Popen([os.path.join(P["fixtures"], "fx_forked")], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    child = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if os.path.exists(rec) and u.proc_state(parent.pid) in ("S", "T"):
                lines = open(rec).read().splitlines()
                kids = [ln.split()[1] for ln in lines if ln.startswith("child ")]
                if kids and u.proc_state(int(kids[0])) == "T":
                    child = int(kids[0])
                    break
            time.sleep(0.1)
        if child is None:
            R.case("the child stops", ["no stopped child within 120 s"])
            return R.finish()
        lines = open(rec).read().splitlines()
        heaps = sorted(tuple(int(x, 16) for x in ln.split()[1:]) for ln in lines
                       if ln.startswith("heap "))
        blocks = [int(ln.split()[1], 16) for ln in lines if ln.startswith("block ")]
        touching = len(heaps) >= 2 and all(heaps[i][1] == heaps[i + 1][0]
                                           for i in range(len(heaps) - 1))
        R.case("fixture: the child's heap is %d [heap] mappings that touch" % len(heaps),
               [] if touching else ["[heap] mappings: %s" % [(hex(a), hex(b)) for a, b in heaps]])
        prefix = os.path.join(WORK, "child")
        r = u.run(["gcore", "-o", prefix, str(child)], timeout=300)
        core = "%s.%d" % (prefix, child)
        if r.rc != 0 or not os.path.exists(core):
            R.case("gcore the child", [r.describe()])
            return R.finish()
    finally:
        for pid in (child, parent.pid):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        parent.wait()

    r = u.run([HS, "list", core, "--raw", "--format", "json"], timeout=600)
    probs = []
    if r.rc != 0:
        R.case("list runs", [r.describe()])
        return R.finish()
    doc = json.loads(r.out)
    used = {int(a["address"], 16) for a in doc["allocations"] if a["state"] == "used"}
    missing = [b for b in blocks if b not in used]
    if missing:
        probs.append("%d of %d recorded blocks not listed in use, first %#x"
                     % (len(missing), len(blocks), missing[0]))
    R.case("list: every one of the child's %d blocks, in use" % len(blocks), probs)
    probs = []
    if doc.get("partial"):
        probs.append("partial")
    if doc.get("warnings") or "warning" in r.err:
        probs.append("warnings: %r %r" % (doc.get("warnings", [])[:3], r.err[:300]))
    R.case("list: not partial, no warning", probs)
    status = R.finish()
    if status == 0:
        shutil.rmtree(WORK, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
