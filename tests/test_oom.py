#!/usr/bin/env python3
"""Out of memory: heapsift with every allocation of its own code failing in
turn (tests/fixtures/failalloc.c, preloaded; the libraries' allocations are
not failed: libdw does not survive one).

On a core of dm_suspect (types from DWARF, suspects, TLS roots), for
`leaks`, `leaks --format json` and `top --format json`, each run with the
N-th allocation failing must end in one of two ways:
  - exit 1 (or 2) with one line on stderr, "heapsift: ... out of memory";
  - exit 0 with the output of a run without failures, or, when the output
    differs, a warning on stderr that says what was left out for want of
    memory ("heapsift: warning: ... out of memory").
Never a signal, never a hang, never a different answer without a word.
`leaks` is run with every second allocation failing, the others with
every fourth (about 1,200 runs, two minutes).

Usage: test_oom.py
Environment: HEAPSIFT, FIXTURES, WORKDIR (see tests/hstest.py);
HS_OOM_STRIDE=K multiplies the strides (a quicker, coarser run).
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "oom")
LIB = os.path.join(hstest.FIXTURES, "failalloc.so")


def sanitized():
    """Whether heapsift was built with ASan (its runtime must be the first
    library, before any preload)."""
    r = subprocess.run(["ldd", HS], capture_output=True, text=True)
    return "libasan" in r.stdout


def run(args, core, fail_at=None, count=False):
    env = dict(os.environ, LD_PRELOAD=LIB)
    if fail_at is not None:
        env["FAIL_AT"] = str(fail_at)
    if count:
        env["FAIL_COUNT"] = "1"
    return hstest.run([HS] + args + [core], env=env, timeout=60)


def sweep(ck, core, args, stride):
    name = " ".join(args)
    ref = run(args, core, count=True)
    lines = [ln for ln in ref.err.splitlines() if ln.startswith("failalloc: ")]
    if ref.rc != 0 or len(lines) != 1:
        ck.check("%s: a run without failures" % name, False, ref.describe())
        return
    out = [ln for ln in ref.err.splitlines() if not ln.startswith("failalloc: ")]
    ck.check("%s: a run without failures says nothing on stderr" % name, not out, out)
    n = int(lines[0].split()[1])
    ck.check("%s: heapsift's own code allocates (%d times)" % (name, n), n > 500, n)
    problems = []
    failed = warned = 0
    for k in range(1, n + 1, stride):
        r = run(args, core, fail_at=k)
        err = [ln for ln in r.err.splitlines() if ln.strip()]
        if r.timed_out or r.rc is None or r.rc < 0 or r.rc > 2:
            problems.append("allocation %d: %s" % (k, r.describe()))
        elif r.rc != 0:
            failed += 1
            if len(err) != 1 or not err[0].startswith("heapsift: ") or \
               "out of memory" not in err[0]:
                problems.append("allocation %d: exit %d, stderr %r" % (k, r.rc, r.err))
        elif r.out != ref.out:
            warned += 1
            if not any(ln.startswith("heapsift: warning: ") and "out of memory" in ln
                       for ln in err):
                problems.append("allocation %d: exit 0, another output, stderr %r"
                                % (k, r.err))
    ck.case("%s: every failed allocation (%d runs) ends in an error or a warned "
            "partial result" % (name, len(range(1, n + 1, stride))), problems)
    # the injection works: most runs lose something
    ck.check("%s: failures took effect (%d errors, %d partial results)"
             % (name, failed, warned), failed + warned > len(range(1, n + 1, stride)) // 2)


def main():
    ck = hstest.Checker()
    if not os.path.exists(LIB):
        ck.check("failalloc.so is built", False, LIB)
        return ck.finish()
    if sanitized():
        ck.skip("out of memory", "heapsift is built with ASan, which must come before any preload")
        return ck.finish()
    try:
        snap = hstest.take_core("dm_suspect", WORK)
    except hstest.HsError as e:
        ck.check("take the dm_suspect core", False, str(e))
        return ck.finish()
    stride = int(os.environ.get("HS_OOM_STRIDE", "1"))
    sweep(ck, snap.core, ["leaks"], 2 * stride)
    sweep(ck, snap.core, ["leaks", "--format", "json"], 4 * stride)
    sweep(ck, snap.core, ["top", "--format", "json"], 4 * stride)
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())
