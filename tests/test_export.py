#!/usr/bin/env python3
"""heapsift export: the pprof profile and the folded stacks say what `top`
says.

  - `go tool pprof` (Debian's golang-go) reads the profile; its inuse_space
    total equals `top`'s total bytes, its inuse_objects total the block
    count, and each root's cumulative value equals that root's retained
    bytes in `top` (a frame's cumulative value is its retained size);
  - leaked_space totals the leaked bytes of `leaks`;
  - the folded stacks add up to the same total, one "a;b;c N" line each,
    root first.

Standard library only; prints "N passed, M failed" last.
"""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "export")
R = hstest.Checker()


def js(*args):
    r = hstest.run([HS] + list(args) + ["--format", "json"], timeout=300)
    if r.rc != 0:
        raise RuntimeError("%s: exit %d: %s" % (args, r.rc, r.err))
    return json.loads(r.out)


def pprof(profile, *args):
    env = dict(os.environ, GOCACHE=os.path.join(WORK, "gocache"), HOME=WORK)
    return hstest.run(["go", "tool", "pprof"] + list(args) + [profile], timeout=300, env=env)


def check(name, core):
    prof = os.path.join(WORK, name + ".pb.gz")
    folded = os.path.join(WORK, name + ".folded")
    r = hstest.run([HS, "export", core, "--pprof", prof, "--folded", folded], timeout=300)
    if r.rc != 0:
        R.case("%s: export" % name, ["exit %d: %s" % (r.rc, r.err)])
        return
    top = js("top", core, "-n", "1000")
    leaks = js("leaks", core)
    total = top["total"]["bytes"]
    if not shutil.which("go"):
        R.skip("%s: go tool pprof" % name, "no go toolchain (Debian package golang-go)")
    else:
        problems = []
        for index, want in (("inuse_space", total), ("inuse_objects", top["total"]["count"]),
                            ("leaked_space", leaks["summary"]["leaked"]["bytes"])):
            r = pprof(prof, "-top", "-unit=B" if "space" in index else "-unit=count",
                      "-sample_index=" + index, "-nodecount=100000")
            m = re.search(r"of (\d+)(B|)\s+total", r.out)
            if r.rc != 0 or not m:
                problems.append("%s: pprof failed: %s %s" % (index, r.out[-300:], r.err[-300:]))
            elif int(m.group(1)) != want and not (want == 0 and "0 total" in r.out):
                problems.append("%s: pprof total %s, heapsift %d" % (index, m.group(1), want))
        R.case("%s: go tool pprof reads the profile; totals equal top's and leaks'" % name, problems)
        r = pprof(prof, "-top", "-unit=B", "-sample_index=inuse_space", "-nodecount=100000")
        cum = {}
        for line in r.out.splitlines():
            m = re.match(r"\s*(\d+)B?\s+\S+\s+\S+\s+(\d+)B?\s+\S+\s+(.*)$", line)
            if m:
                cum[m.group(3).strip()] = int(m.group(2))
        problems = []
        for row in top["roots"]:
            if row["kind"] in ("shared", "leaked"):
                continue
            if cum.get(row["name"]) != row["retained"]:
                problems.append("%s: pprof cum %s, top retained %d" % (row["name"], cum.get(row["name"]), row["retained"]))
        R.case("%s: each root's cumulative value in pprof is its retained size" % name, problems)
    problems = []
    s = 0
    for line in open(folded):
        m = re.match(r"^([^ ].*) (\d+)$", line.rstrip("\n"))
        if not m:
            problems.append("bad line %r" % line)
            continue
        s += int(m.group(2))
    if s != total:
        problems.append("folded stacks add up to %d, top says %d" % (s, total))
    R.case("%s: folded stacks are well formed and add up to the heap" % name, problems)


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    for name in ("demo", "rc_leaks"):
        binary = os.path.join(hstest.FIXTURES, name)
        if not os.path.exists(binary):
            R.skip(name, "fixture not built")
            continue
        core = hstest.take_core(binary, WORK, name, record=False).core
        check(name, core)
    r = hstest.run([HS, "export", core], timeout=60)
    R.case("export without an output is a usage error", [] if r.rc == 2 else ["exit %d" % r.rc])
    for opt in ("--pprof", "--folded"):
        hstest.failed_writes(R, "export " + opt, WORK,
                        lambda path: [HS, "export", core, opt, path])
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
