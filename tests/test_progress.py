#!/usr/bin/env python3
"""Progress lines: on a terminal, a long phase shows "phase: N% (rate)" on
stderr, redrawn in place and cleared at its end; --quiet and a stderr that
is not a terminal show nothing.

A core of bench_heap with 300,000 live blocks (tests/fixtures/bench_heap.c)
is analyzed by `leaks` with stderr on a pseudo-terminal.  Its phases take
well under a second here, so HEAPSIFT_PROGRESS_DELAY=0 makes them show at
once; with the default delay (1 s) none of them shows.  Checks:
  - the heap walk, the pointer scan and the dominators each show percents
    that never go down and stay under 100, and a rate with its unit;
  - every line is drawn over the last one (\\r, erase to the end of the
    line) and the last one is erased: stdout's JSON is whole;
  - the output (stdout) is the same with progress and without;
  - --quiet, a pipe as stderr, and the default delay show no progress.

Standard library only.  Prints "N passed, M failed" last.
"""

import os
import pty
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hstest  # noqa: E402

R = hstest.Checker()


def on_pty(argv, env):
    """Runs argv with stderr on a pseudo-terminal: (rc, stdout, stderr)."""
    master, slave = pty.openpty()
    # stdout to a file: a pipe read only after stderr's end would fill up
    outf = tempfile.TemporaryFile()
    with open(os.devnull, "rb") as devnull:
        proc = subprocess.Popen(argv, stdin=devnull, stdout=outf,
                                stderr=slave, env=env)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        err += chunk
    proc.wait(timeout=hstest.HEAPSIFT_TIMEOUT)
    os.close(master)
    outf.seek(0)
    out = outf.read()
    outf.close()
    return proc.returncode, out, err.decode("utf-8", "replace")


def phases(err):
    """Progress lines by phase, in order: {phase: [line, ...]}."""
    shown = {}
    for piece in err.split("\r"):
        line = piece.replace("\x1b[K", "")
        m = re.match(r"([a-z' ]+): (.*)$", line)
        if m and not line.startswith("heapsift"):
            shown.setdefault(m.group(1), []).append(m.group(2))
    return shown


def main():
    snap = hstest.take_core("bench_heap", name="progress_bench", args=(300000, 1))
    hs = hstest.HEAPSIFT
    argv = [hs, "leaks", snap.core, "--format", "json"]
    env = dict(os.environ, HEAPSIFT_PROGRESS_DELAY="0")

    rc, out, err = on_pty(argv, env)
    R.check("leaks runs with progress", rc == 0, "exit %d: %s" % (rc, err[-500:]))
    shown = phases(err)
    for phase, unit in (("walking the heap", "/s"), ("scanning for pointers", "blocks/s"),
                        ("computing dominators", "nodes/s")):
        lines = shown.get(phase, [])
        pcts = [int(m.group(1)) for m in (re.match(r"(\d+)%", x) for x in lines) if m]
        R.check("%s: shown with percents" % phase, len(pcts) >= 2,
                "lines: %r" % lines[:5])
        R.check("%s: percents go up, under 100" % phase,
                pcts == sorted(pcts) and all(0 <= p < 100 for p in pcts), pcts)
        R.check("%s: a rate in %s" % (phase, unit),
                any(re.search(r"\([0-9.]+ ?[kMGT]?(iB)? ?%s\)" % re.escape(unit), x)
                    for x in lines), "lines: %r" % lines[-3:])
    R.check("every progress line is drawn over the last",
            all(p.startswith("\x1b[K") or not p for p in err.split("\r")[1:]),
            repr(err[:300]))
    R.check("the last progress line is erased", err.endswith("\r\x1b[K") or
            not err.strip(), repr(err[-200:]))

    plain = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, env=env,
                           timeout=hstest.HEAPSIFT_TIMEOUT)
    R.check("stdout is the same with progress and without",
            plain.returncode == 0 and plain.stdout == out,
            "exit %d, %d vs %d bytes" % (plain.returncode, len(plain.stdout), len(out)))
    R.check("a pipe as stderr shows no progress", "\r" not in plain.stderr.decode(),
            repr(plain.stderr[:200]))

    rc, _, err = on_pty(argv + ["--quiet"], env)
    R.check("--quiet shows no progress", rc == 0 and "\r" not in err, repr(err[:200]))

    rc, _, err = on_pty(argv, dict(os.environ, HEAPSIFT_PROGRESS_DELAY=""))
    fast = not phases(err)
    R.check("phases under a second show no progress by default", rc == 0 and fast,
            "phases shown: %s" % sorted(phases(err)))
    hstest.remove_cores("progress_bench")
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
