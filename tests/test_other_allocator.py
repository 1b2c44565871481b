#!/usr/bin/env python3
"""A core of a program whose malloc is jemalloc: heapsift says so.

Its process also has glibc, with a main_arena that malloc never used:
walking that would report an empty heap as if it were the program's.
Instead `list`, `leaks` and `top` fail with one line naming jemalloc and its
library's build-id, and `info` works and says the same about the allocator.
Prints "N passed, M failed" last.
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import badinput_util as u  # noqa: E402

P = u.paths()
HS = P["heapsift"]
WORK = os.path.join(P["workdir"], "other_allocator")
R = u.Results()


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    core, _ = u.take_core(os.path.join(P["fixtures"], "je_simple"), WORK, "je", record=False)
    for cmd in (["list"], ["leaks"], ["top"], ["frag"]):
        r = u.run([HS] + cmd + [core], timeout=120)
        lines = [ln for ln in r.err.splitlines() if ln.strip()]
        ok = r.rc == 1 and len(lines) == 1 and "jemalloc" in lines[0] and "build-id" in lines[0]
        R.case("%s: one line naming jemalloc, exit 1" % cmd[0],
               [] if ok else ["exit %d, stderr %r, stdout %r" % (r.rc, r.err, r.out[:200])])
    r = u.run([HS, "info", core, "--format", "json"], timeout=120)
    problems = []
    if r.rc != 0:
        problems.append("exit %d: %s" % (r.rc, r.err))
    else:
        a = json.loads(r.out)["allocator"]
        if a.get("name") is not None or "jemalloc" not in a.get("error", ""):
            problems.append("allocator: %s" % a)
    R.case("info: works, and its allocator says jemalloc", problems)
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
