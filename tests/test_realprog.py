#!/usr/bin/env python3
"""Real programs from Debian, at a steady state: is the verdict right?

Each program loads a large structure, says so on stdout, and blocks reading
stdin; the test takes a core with gcore and runs heapsift on it.  Nothing
was leaked (the programs free what they drop, or keep it), so:
  - `leaks` finds 0 leaked bytes;
  - "possible" is under 1% of the used bytes: the header rules
    (analyzers/rules.h) account for the pointers these programs keep past
    their own headers (sqlite's size prefix and page cache);
  - what each rule holds is reported;
  - info, leaks and top print no warning: a healthy core has nothing to
    warn about.

Programs: sqlite3 (200,000 rows in an in-memory table with an index),
perl (a 300,000-entry hash), lua5.4 (a 300,000-entry table of tables),
Debian's python3 under PYTHONMALLOC=malloc (a 300,000-entry dict of
tuples and lists).  A program that is not installed is skipped.

Standard library only.  Prints "N passed, M failed" last.
"""

import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import badinput_util as u  # noqa: E402

P = u.paths()
HS = P["heapsift"]
WORK = os.path.join(P["workdir"], "realprog")
R = u.Results()

SQLITE_LOAD = """
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c BLOB);
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i < 200000)
INSERT INTO t SELECT i, printf('row %d payload %s', i, hex(randomblob(16))),
                     randomblob(40) FROM r;
CREATE INDEX tb ON t(b);
SELECT 'ready', count(*) FROM t;
"""

PERL_LOAD = r"""
my %h;
for my $i (1..300000) { $h{"key$i"} = "value $i " x 3; }
$| = 1;
print "ready ", scalar(keys %h), "\n";
my $line = <STDIN>;
"""

LUA_LOAD = r"""
local t = {}
for i = 1, 300000 do t[i] = {id = i, name = "item" .. i} end
io.write("ready ", #t, "\n")
io.flush()
io.read()
"""

PYTHON_LOAD = r"""
import sys
d = {}
for i in range(300000):
    d["key%d" % i] = ("value", i, [i])
sys.stdout.write("ready %d\n" % len(d))
sys.stdout.flush()
sys.stdin.readline()
"""

# name, argv, stdin script, environment additions
PROGRAMS = [
    ("sqlite3", ["sqlite3", ":memory:"], SQLITE_LOAD, {}),
    ("perl", ["perl", "-e", PERL_LOAD], "", {}),
    ("lua5.4", ["lua5.4", "-e", LUA_LOAD], "", {}),
    # Debian's python3, every object from malloc
    ("python3", ["/usr/bin/python3", "-c", PYTHON_LOAD], "", {"PYTHONMALLOC": "malloc"}),
]


def take(name, argv, script, env):
    """Run until it prints 'ready', gcore it, kill it; the core's path."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, **env))
    try:
        if script:
            proc.stdin.write(script.encode())
            proc.stdin.flush()
        deadline = time.monotonic() + 120
        line = b""
        while b"ready" not in line:
            if time.monotonic() > deadline:
                raise RuntimeError("%s never got ready" % name)
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                raise RuntimeError("%s exited with %s" % (name, proc.returncode))
        time.sleep(0.2)  # blocked in read(2) on stdin by now
        prefix = os.path.join(WORK, name)
        r = u.run(["gcore", "-o", prefix, str(proc.pid)], timeout=300)
        core = "%s.%d" % (prefix, proc.pid)
        if r.rc != 0 or not os.path.exists(core):
            raise RuntimeError("gcore failed: " + r.describe())
        return core
    finally:
        proc.kill()
        proc.wait()


def check(name, core):
    r = u.run([HS, "leaks", core, "--format", "json", "--quiet"], timeout=600)
    probs = []
    if r.rc != 0:
        R.case("%s: leaks runs" % name, [r.describe()])
        return
    s = json.loads(r.out)["summary"]
    used = s["reachable"]["bytes"] + s["possible"]["bytes"] + s["leaked"]["bytes"]
    share = 100.0 * s["possible"]["bytes"] / used if used else 0.0
    held = {k: v["count"] for k, v in s.get("via", {}).items() if v["count"]}
    learned = json.loads(r.out)["summary"].get("learned", [])
    print("     %s: %d used bytes, possible %d bytes (%.3f%%), leaked %d; via %s; "
          "learned %s" % (name, used, s["possible"]["bytes"], share,
                          s["leaked"]["bytes"], held,
                          [(x["size"], [o["offset"] for o in x["offsets"]]) for x in learned][:6]))
    if s["leaked"]["bytes"]:
        probs.append("leaked %d blocks, %d bytes" % (s["leaked"]["count"], s["leaked"]["bytes"]))
    R.case("%s: nothing leaked" % name, probs)
    R.case("%s: possible under 1%% of used bytes (%.3f%%)" % (name, share),
           [] if share < 1.0 else ["possible is %.2f%% of %d bytes" % (share, used)])
    for cmd in ("info", "leaks", "top"):
        r = u.run([HS, cmd, core], timeout=600)
        warns = [ln for ln in r.err.splitlines() if "warning" in ln]
        probs = [] if r.rc == 0 else [r.describe()]
        R.case("%s: %s prints no warning" % (name, cmd), probs + warns[:3])


def main():
    if not os.access(HS, os.X_OK):
        R.case("heapsift exists", ["not found: %s" % HS])
        return R.finish()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    for name, argv, script, env in PROGRAMS:
        if not shutil.which(argv[0]):
            R.skip(name, "%s is not installed" % argv[0])
            continue
        try:
            core = take(name, argv, script, env)
        except (RuntimeError, OSError) as e:
            R.case("%s: take a core" % name, [str(e)])
            continue
        check(name, core)
    status = R.finish()
    if status == 0:
        shutil.rmtree(WORK, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
