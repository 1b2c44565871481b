#!/usr/bin/env python3
"""The pause of `heapsift snapshot` (tracked, the default where the kernel
tracks writes; --fork; --no-fork) and of gdb's gcore, as the target sees
it, at several heap sizes (docs/performance.md).

  scripts/snapshot-pause.py [MIB ...]      (default 64 256 1024)

Runs tests/fixtures/fx_snapshot (built in build/tests/fixtures) with a
heap of MIB MiB and, three times each, resets its largest clock gap,
takes a snapshot, and reads the gap back.  Prints one line per size and
way: the three gaps seen by the target and the pause heapsift printed.
Needs ptrace (root, or yama's ptrace_scope 0) and gdb for gcore.
"""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD") or os.path.join(SRC, "build")
HS = os.path.join(BUILD, "heapsift")
FX = os.path.join(BUILD, "tests", "fixtures", "fx_snapshot")


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [64, 256, 1024]
    tmp = tempfile.mkdtemp(prefix="hs-pause-")
    for mib in sizes:
        p = subprocess.Popen([FX, str(mib), os.path.join(tmp, "rec")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, bufsize=1)
        p.stdout.readline()

        def ask(what):
            p.stdin.write(what + "\n")
            p.stdin.flush()
            return p.stdout.readline().split()

        out = os.path.join(tmp, "core")
        ways = (("default", [HS, "snapshot", str(p.pid), "-o", out]),
                ("fork", [HS, "snapshot", str(p.pid), "-o", out, "--fork"]),
                ("no-fork", [HS, "snapshot", str(p.pid), "-o", out, "--no-fork"]),
                ("gcore", ["gcore", "-o", out, str(p.pid)]))
        if os.environ.get("NO_GCORE"):
            ways = ways[:-1]
        for name, argv in ways:
            seen, printed = [], []
            for _ in range(3):
                ask("reset")
                r = subprocess.run(argv, capture_output=True, text=True)
                seen.append(int(ask("gap")[1]) / 1000.0)
                for line in r.stderr.splitlines():
                    if line.startswith("paused "):
                        printed.append(float(line.split()[1]))
                if name == "default" and "its writes tracked" in r.stdout:
                    name = "tracked"
                for f in os.listdir(tmp):
                    if f.startswith("core"):
                        os.remove(os.path.join(tmp, f))
            print("%5d MiB  %-8s seen by the target %s ms; printed %s ms"
                  % (mib, name, " ".join("%.1f" % s for s in seen),
                     " ".join("%.1f" % s for s in printed) or "-"))
            sys.stdout.flush()
        p.kill()
        p.wait()
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
