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
Debian's python3 (a 300,000-entry dict of tuples and lists) under
PYTHONMALLOC=malloc and with pymalloc on (its objects in pymalloc's
pools, analyzers/alloc/pymalloc.h), rp_python_host (tests/fixtures/
rp_python_host.c: the same load in a program that embeds libpython3.N.so,
and that program again named python3.11, as a shared build's launcher),
and rp_sqlite_host (tests/fixtures/rp_sqlite_host.c: a
program that embeds libsqlite3 and loads 100,000 rows).  A program that is
not installed is skipped.

Five of them plant a leak from outside the program's own allocator use:
the Python runs call libc's malloc through ctypes and drop the result, and
rp_sqlite_host drops a block it malloc'ed itself.  Each prints
"leak ADDRESS USABLE_SIZE" before "ready"; there, `leaks` must find exactly
that block as the one leak root, with that size, and nothing else leaked.
The one exception is read from the core itself: when an aligned word
outside the block holds an address inside it (a program's data word that
happens to equal one: Debian's python3.11 is not position-independent, so
its heap lies at low addresses that small integers hit), memcheck's rule
makes the block "possible", and the test then requires exactly that.

Standard library only.  Prints "N passed, M failed" last.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hstest  # noqa: E402
import corrupt_core  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "realprog")
R = hstest.Checker()

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
import ctypes
import sys


def plant():
    # a block from libc's malloc that nothing keeps: the leak planted from
    # outside CPython's own allocations
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.malloc_usable_size.restype = ctypes.c_size_t
    libc.malloc_usable_size.argtypes = [ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    p = libc.malloc(7000)
    libc.memset(p, 0x4C, 7000)
    sys.stdout.write("leak %#x %d\n" % (p, libc.malloc_usable_size(p)))


plant()
d = {}
for i in range(300000):
    d["key%d" % i] = ("value", i, [i])
sys.stdout.write("ready %d\n" % len(d))
sys.stdout.flush()
sys.stdin.readline()
"""

# name, argv, stdin script, environment additions
HOST = os.path.join(hstest.FIXTURES, "rp_sqlite_host")
PYHOST = os.path.join(hstest.FIXTURES, "rp_python_host")
LAUNCHER = os.path.join(WORK, "bin", "python3.11")
PROGRAMS = [
    ("sqlite3", ["sqlite3", ":memory:"], SQLITE_LOAD, {}),
    ("perl", ["perl", "-e", PERL_LOAD], "", {}),
    ("lua5.4", ["lua5.4", "-e", LUA_LOAD], "", {}),
    # Debian's python3, every object from malloc
    ("python3", ["/usr/bin/python3", "-c", PYTHON_LOAD], "", {"PYTHONMALLOC": "malloc"}),
    # the same with pymalloc on (the default): objects in pymalloc's pools
    ("python3-pymalloc", ["/usr/bin/python3", "-c", PYTHON_LOAD], "", {"PYTHONMALLOC": "pymalloc"}),
    ("rp_sqlite_host", [HOST], "", {}),
    # the same Python load in a program that embeds libpython3.N.so, and
    # that program named python3.11: a shared build's launcher (pyenv's
    # layout), a module of CPython's name without the interpreter in it
    ("rp_python_host", [PYHOST, PYTHON_LOAD], "", {}),
    ("python3.11-shared", [LAUNCHER, PYTHON_LOAD], "", {}),
]


def take(name, argv, script, env):
    """Run until it prints 'ready', gcore it, kill it; the core's path and
    the planted leak (address, usable size) or None."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, **env))
    try:
        if script:
            proc.stdin.write(script.encode())
            proc.stdin.flush()
        deadline = time.monotonic() + 120
        line = b""
        planted = None
        while b"ready" not in line:
            if time.monotonic() > deadline:
                raise RuntimeError("%s never got ready" % name)
            line = proc.stdout.readline()
            if line.startswith(b"leak "):
                f = line.split()
                planted = (int(f[1], 16), int(f[2]))
            if not line and proc.poll() is not None:
                raise RuntimeError("%s exited with %s" % (name, proc.returncode))
        time.sleep(0.2)  # blocked in read(2) on stdin by now
        return hstest.gcore(proc.pid, os.path.join(WORK, name), what=name), planted
    finally:
        hstest.kill_process(proc)


def interior_words(core, addr, size):
    """Where the core holds an aligned word outside [addr, addr + size) whose
    value lies inside it, past its start: the addresses of those words.  Read
    from the core's PT_LOAD segments, independently of heapsift.  A value in
    the range shares its bytes 2 to 7 with addr or with addr + size - 1: those
    six bytes are searched for, and each hit is checked whole."""
    segs = corrupt_core.load_segments(core)
    keys = {struct.pack("<Q", a)[2:] for a in (addr, addr + size - 1)}
    found = []
    with open(core, "rb") as f:
        for sg in segs:
            if not sg.filesz:
                continue
            f.seek(sg.offset)
            data = f.read(sg.filesz)
            for key in keys:
                at = data.find(key)
                while at >= 0:
                    word = at - 2
                    if word >= 0 and word % 8 == 0 and (sg.vaddr + word) % 8 == 0:
                        v = struct.unpack_from("<Q", data, word)[0]
                        where = sg.vaddr + word
                        if addr < v < addr + size and not addr <= where < addr + size:
                            found.append(where)
                    at = data.find(key, at + 1)
    return sorted(set(found))


def check(name, core, planted):
    r = hstest.run([HS, "leaks", core, "--format", "json", "--quiet"], timeout=600)
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
    if planted:
        addr, size = planted
        roots = [(int(lr["address"], 16) if isinstance(lr["address"], str) else lr["address"],
                  g.get("size"))
                 for g in json.loads(r.out)["groups"] for lr in g["leak_roots"]]
        exact = []
        if roots != [(addr, size)]:
            exact.append("leak roots %s, expected only the planted %#x (%d bytes)"
                         % ([(hex(a), z) for a, z in roots[:5]], addr, size))
        if (s["leaked"]["count"], s["leaked"]["bytes"]) != (1, size):
            exact.append("leaked %d blocks, %d bytes; expected 1 block, %d bytes"
                         % (s["leaked"]["count"], s["leaked"]["bytes"], size))
        inside = interior_words(core, addr, size) if exact else []
        if inside:
            # a word of the core points into the block: if a live one,
            # the block is possible (memcheck's rule), and nothing leaked
            sh = hstest.run([HS, "show", core, "%#x" % addr], timeout=600)
            cls = [ln.split(":", 1)[1].strip() for ln in sh.out.splitlines()
                   if ln.startswith("class:")]
            print("     %s: %d word(s) of the core point into the planted block, "
                  "the first at %#x; heapsift: %s" % (name, len(inside), inside[0], cls))
            if cls != ["possible"]:
                probs += exact + ["the planted block is %s: neither the one leak root "
                                  "nor possible" % (cls or sh.describe())]
            elif s["leaked"]["count"]:
                probs.append("the planted block is possible, but %d blocks (%d bytes) "
                             "leaked" % (s["leaked"]["count"], s["leaked"]["bytes"]))
        else:
            probs += exact
        R.case("%s: the planted leak (%#x, %d bytes) is the one leak root%s"
               % (name, addr, size, ", or possible: pointed into" if inside else ""),
               probs)
    else:
        if s["leaked"]["bytes"]:
            probs.append("leaked %d blocks, %d bytes" % (s["leaked"]["count"], s["leaked"]["bytes"]))
        R.case("%s: nothing leaked" % name, probs)
    if name in ("python3-pymalloc", "rp_python_host", "python3.11-shared"):
        # the 300,000 entries' tuples and lists are Python objects of
        # those types: the interpreter was found (in the executable, or
        # in the libpython3.N.so the host loads)
        t = hstest.run([HS, "types", core, "--format", "json"], timeout=600)
        rows = {x["type"]: x["count"] for x in json.loads(t.out)["types"]} if t.rc == 0 else {}
        R.case("%s: the entries' tuples and lists typed (%s tuples, %s lists)"
               % (name, rows.get("tuple"), rows.get("list")),
               [] if rows.get("tuple", 0) >= 300000 and rows.get("list", 0) >= 300000
               else [t.describe() if t.rc else "tuple %s, list %s" % (rows.get("tuple"), rows.get("list"))])
    R.case("%s: possible under 1%% of used bytes (%.3f%%)" % (name, share),
           [] if share < 1.0 else ["possible is %.2f%% of %d bytes" % (share, used)])
    check_sharers(name, core)
    for cmd in ("info", "leaks", "top"):
        r = hstest.run([HS, cmd, core], timeout=600)
        warns = [ln for ln in r.err.splitlines() if "warning" in ln]
        probs = [] if r.rc == 0 else [r.describe()]
        R.case("%s: %s prints no warning" % (name, cmd), probs + warns[:3])


def check_sharers(name, core):
    """`top` names the roots that share a block no single root holds
    (shared_by, in the order its walk finds them).  With two threads, the
    passes that list the walked blocks' predecessors split the graph's
    rows (sources; or pairs: the edges gathered in one pass, by sources
    again when they are too many) or the walked blocks (targets): the
    output must be one thread's, byte for byte, and so must the rows (a
    hash of them on stderr, with HEAPSIFT_TEST_SHARERS_SPLIT set)."""
    outs, rows = {}, {}
    for mode, threads in (("none", "1"), ("sources", "2"), ("targets", "2"),
                          ("pairs", "2")):
        env = dict(os.environ, HEAPSIFT_TEST_SHARERS_SPLIT=mode)
        r = hstest.run([HS, "top", core, "--format", "json", "--quiet",
                        "--threads", threads, "-n", "40"], timeout=600, env=env)
        if r.rc != 0:
            R.case("%s: top's sharers, split %s" % (name, mode), [r.describe()])
            return
        outs[mode] = r.out
        rows[mode] = [ln for ln in r.err.splitlines() if "heapsift: sharers:" in ln]
    top = json.loads(outs["none"])
    shared = [x["shared_by_count"] for x in top["roots"] + top["allocations"]
              if "shared_by_count" in x]
    shared += [x["held_by"]["shared_by_count"] for x in top["allocations"]
               if "shared_by_count" in x.get("held_by", {})]
    probs = [] if shared and max(shared) >= 2 else [
        "no block shared by two roots: nothing to compare (%s)" % shared]
    # (and the rows themselves: their sizes and a hash, with the split set)
    if len(rows["none"]) != 1:
        probs.append("no line on the rows: %s" % rows["none"])
    for mode in ("sources", "targets", "pairs"):
        if outs[mode] != outs["none"]:
            probs.append("split by %s: the JSON differs from one thread's" % mode)
        if rows[mode] != rows["none"]:
            probs.append("split by %s: rows %s, one thread's %s" % (mode, rows[mode], rows["none"]))
    R.case("%s: top's sharers are one thread's with the passes split three ways "
           "(shared by up to %s roots; %s)" % (name, max(shared) if shared else 0,
                                               rows["none"][0][19:] if rows["none"] else ""),
           probs)


def main():
    if not os.access(HS, os.X_OK):
        R.case("heapsift exists", ["not found: %s" % HS])
        return R.finish()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    if os.access(PYHOST, os.X_OK):
        os.makedirs(os.path.dirname(LAUNCHER))
        shutil.copy2(PYHOST, LAUNCHER)
    for name, argv, script, env in PROGRAMS:
        if not shutil.which(argv[0]):
            R.skip(name, "%s is not installed (or not built)" % argv[0])
            continue
        try:
            core, planted = take(name, argv, script, env)
        except (RuntimeError, hstest.HsError, OSError) as e:
            R.case("%s: take a core" % name, [str(e)])
            continue
        if name in ("python3", "python3-pymalloc", "rp_sqlite_host",
                    "rp_python_host", "python3.11-shared") and not planted:
            R.case("%s: the program says what it leaked" % name, ["no 'leak' line"])
            continue
        check(name, core, planted)
    status = R.finish()
    if status == 0:
        shutil.rmtree(WORK, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
