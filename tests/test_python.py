#!/usr/bin/env python3
"""CPython's heap: pymalloc's pools and the objects' types, against the
interpreter's own counts.

tests/fixtures/py_population.py runs under Debian's python3 and builds
known populations (instances of three classes, a 20,000-entry dict, lists
of strings, cycles kept alive), records them and blocks.  The test stops
it with gdb, writes the core (gcore), and in the same stop asks the
interpreter for its counts: _PyObject_DebugMallocStats (what
sys._debugmallocstats() prints: per size class, pools, blocks in use and
available) and _Py_GetAllocatedBlocks (sys.getallocatedblocks()).  Then:

  - `info`: pymalloc's table equals the interpreter's, class by class
    (pools, blocks in use, blocks available), and so do the totals;
    sys.getallocatedblocks() is pymalloc's blocks in use plus the objects
    over 512 bytes that pymalloc handed to malloc (its raw blocks), which
    are malloc's blocks: the difference is at least 0 and at most the
    number of malloc's used blocks;
  - `types`: the count of each class of the fixture equals the number of
    its instances among gc.get_objects(); the big dict's block is a
    `dict` and its keys table a `dict (keys)`, the list of orders a `list`
    and its item array a `list (items)`;
  - `frag`: pymalloc's arenas split into blocks in use, available blocks,
    unused pools, pool headers, quantization and arena alignment, each
    byte for byte as the interpreter's own footprint lines, through
    obmalloc's arena table found in malloc's blocks;
  - `redact`: the copy analyzes the same (`info`, `types`, `leaks`,
    `frag`), and the strings the program made are not in it;
  - `summary`: names the fixture's classes by their type, and holds none
    of the program's strings, dict keys or attribute names (what `path`
    names a field by);
  - `path` to an instance's attribute and to a dict's value names the
    attribute (`__main__.Order (values).name`) and the key
    (`dict (keys)['k5']`);
  - `leaks`: the garbage cycles (the collector is disabled) and the
    Holder whose only reference the fixture leaked through the C API are
    leaked; the GC heads' links are not references; nothing the program
    holds is leaked; a garbage object whose address sits in the rounding
    past a live tuple's end, one whose address sits in the slot past a
    live list's end (list.pop() leaves it), and one whose address sits in
    the frame slot of a call that returned (above the top of CPython's
    frame stack), are leaked too, and so are a garbage list and a garbage
    dict (and its keys table) taken from CPython's free lists, whose
    slots above the lists' counts keep their addresses (stale roots);
  - bad input, on copies of the core: the count of CPython's free list of
    lists past its array or 0: no free list taken, no crash; the words
    around it all the address of a list: analyzed; a str whose
    length no longer fits its block: scanned whole; a pool
    whose free list is broken is
    left out with a warning (its blocks in use missing from the total,
    nothing else), a pool header overwritten between two pools of its
    arena is reported, an object whose ob_type points outside the
    core is left untyped with a warning, the other counts unchanged, an
    arena's record in the arena table corrupted leaves frag without the
    table (what needs it unknown), and a frame chunk whose size word
    disagrees is unexplained memory again.

Skipped when /usr/bin/python3 or gdb is missing.  Standard library only.
Prints "N passed, M failed" last.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corrupt_core  # noqa: E402
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "python")
R = hstest.Checker()
PYTHON = os.environ.get("HS_PYTHON", "/usr/bin/python3")  # another interpreter, by hand
FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "fixtures", "py_population.py")
POOL = 16384

GDB_SCRIPT = """set pagination off
set confirm off
gcore {core}
print ((long(*)(void))_Py_GetAllocatedBlocks)()
call ((int(*)(void*))_PyObject_DebugMallocStats)(*(void**)&stderr)
detach
quit
"""


def take():
    """Run the fixture, stop it with gdb: (core, record, stats text,
    getallocatedblocks)."""
    rec_path = os.path.join(WORK, "record.json")
    err_path = os.path.join(WORK, "stderr.txt")
    core = os.path.join(WORK, "python.core")
    with open(err_path, "w") as err:
        proc = subprocess.Popen([PYTHON, FIXTURE, rec_path], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err)
    try:
        deadline = time.monotonic() + 120
        line = b""
        while b"ready" not in line:
            if time.monotonic() > deadline:
                raise hstest.HsError("the fixture never got ready")
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                raise hstest.HsError("the fixture exited with %s" % proc.returncode)
        time.sleep(0.2)  # blocked in read(2) by now
        script = os.path.join(WORK, "stop.gdb")
        with open(script, "w") as f:
            f.write(GDB_SCRIPT.format(core=core))
        r = hstest.run(["gdb", "-p", str(proc.pid), "-batch", "-nx", "-x", script],
                       timeout=hstest.GCORE_TIMEOUT)
        m = re.search(r"^\$1 = (\d+)$", r.out, re.M)
        if r.rc != 0 or not os.path.exists(core) or not m:
            raise hstest.HsError("gdb failed: %s\n%s" % (r.describe(), r.out[-2000:]))
        blocks = int(m.group(1))
    finally:
        hstest.kill_process(proc)
    with open(err_path) as f:
        stats = f.read()
    rec = hstest.load_json(rec_path, "the fixture's record")
    with open(rec_path + ".dead") as f:
        rec["dead"] = int(f.read())
    rec["free_list"] = hstest.load_json(rec_path + ".freelist", "the fixture's free-list record")
    return core, rec, stats, blocks


def parse_stats(text):
    """The rows of _PyObject_DebugMallocStats: {index: (size, pools, used,
    avail)}."""
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 5 and all(x.isdigit() for x in f):
            rows[int(f[0])] = tuple(int(x) for x in f[1:])
    return rows


def hs_json(*args):
    r = hstest.run([HS] + list(args) + ["--format", "json"], timeout=600)
    if r.rc != 0:
        raise hstest.HsError("heapsift %s: %s" % (args[0], r.describe()))
    return json.loads(r.out), r.err


def check_info(core, stats, blocks):
    info, err = hs_json("info", core)
    py = info.get("pymalloc")
    if not R.check("info: pymalloc found", py is not None, "no pymalloc object"):
        return None
    want = parse_stats(stats)
    got = {c["index"]: (c["size"], c["pools"], c["used"], c["avail"]) for c in py["classes"]}
    probs = ["class %d: heapsift %s, interpreter %s (size, pools, used, avail)"
             % (i, got.get(i), want.get(i)) for i in sorted(set(want) | set(got))
             if got.get(i) != want.get(i)]
    if not want:
        probs.append("the interpreter printed no table:\n" + stats[-1000:])
    R.case("info: every size class as the interpreter counts it", probs)
    used = sum(v[2] for v in want.values())
    avail = sum(v[3] for v in want.values())
    R.check("info: blocks in use %d, available %d" % (used, avail),
            (py["used_blocks"], py["free_blocks"]) == (used, avail),
            "heapsift %d, %d" % (py["used_blocks"], py["free_blocks"]))
    m = re.search(r"# bytes in allocated blocks\s*=\s*([\d,]+)", stats)
    R.check("info: bytes in allocated blocks", m and py["used_bytes"] == int(m.group(1).replace(",", "")),
            "heapsift %d, interpreter %s" % (py["used_bytes"], m and m.group(1)))
    tot = info["allocator"]["totals"]["by_where"]
    malloc_used = sum(v["count"] for k, v in tot.items()
                      if not k.startswith("pymalloc") and k in ("heap", "mmapped"))
    raw = blocks - py["used_blocks"]
    R.check("info: sys.getallocatedblocks() %d = %d in pools + %d raw (<= %d malloc blocks)"
            % (blocks, py["used_blocks"], raw, malloc_used),
            0 <= raw <= malloc_used)
    R.check("info: by_where counts pymalloc's blocks",
            tot.get("pymalloc", {}).get("count") == used and
            tot.get("pymalloc_free", {}).get("count") == avail, str(tot))
    R.check("info: no warning, not partial", not info["warnings"] and
            not info["allocator"]["partial"], "%s %s" % (info["warnings"], err[-500:]))
    return py


def stat_bytes(stats, pattern):
    """A byte count of _PyObject_DebugMallocStats' footprint lines."""
    m = re.search(pattern + r"\s*=\s*([\d,]+)", stats)
    return int(m.group(1).replace(",", "")) if m else None


def check_frag(core, stats):
    """frag splits pymalloc's arenas as the interpreter does, byte for byte;
    the footprint counts the arenas on their own."""
    d, err = hs_json("frag", core)
    py = d.get("pymalloc")
    if not R.check("frag: pymalloc's section", py is not None, str(list(d))):
        return
    want = {
        "arenas_bytes": stat_bytes(stats, r"\d+ arenas \* \d+ bytes/arena"),
        "blocks_bytes": stat_bytes(stats, r"# bytes in allocated blocks"),
        "available_bytes": stat_bytes(stats, r"# bytes in available blocks"),
        "unused_pools_bytes": stat_bytes(stats, r"\d+ unused pools \* \d+ bytes"),
        "headers_bytes": stat_bytes(stats, r"# bytes lost to pool headers"),
        "quantization_bytes": stat_bytes(stats, r"# bytes lost to quantization"),
        "alignment_bytes": stat_bytes(stats, r"# bytes lost to arena alignment"),
    }
    if not R.check("frag: the interpreter printed its arenas' footprint",
                   None not in want.values(), stats[-1500:]):
        return
    probs = ["%s: heapsift %s, interpreter %d" % (k, py.get(k), v)
             for k, v in want.items() if py.get(k) != v]
    R.case("frag: pymalloc's arenas split as sys._debugmallocstats() does (%d bytes: %s)"
           % (want["arenas_bytes"], ", ".join("%s %d" % (k[:-6], v) for k, v in want.items()
                                              if k != "arenas_bytes")), probs)
    m = re.search(r"# arenas allocated current\s*=\s*(\d+)", stats)
    pools = sum(a["pools"] for a in py["arenas"])
    R.check("frag: %s arenas, each with its mapping and pools from the arena table"
            % (m and m.group(1)),
            m and len(py["arenas"]) == int(m.group(1)) and
            all(a["address"] and a["total_pools"] for a in py["arenas"]) and
            pools == sum(v[1] for v in parse_stats(stats).values()), str(py["arenas"][:3]))
    fp = {x["kind"]: x for x in d["footprint"]}
    R.check("frag: the footprint's pymalloc_arenas are the arenas' mappings",
            fp.get("pymalloc_arenas", {}).get("in_use") == want["arenas_bytes"],
            str(fp.get("pymalloc_arenas")))


def type_counts(core):
    t, err = hs_json("types", core)
    return {row["type"]: row["count"] for row in t["types"]}, t, err


def block_type(core, addr):
    s, _ = hs_json("show", core, "%#x" % addr)
    return s


def check_types(core, rec):
    counts, t, err = type_counts(core)
    probs = ["%s: heapsift %s, gc.get_objects() %d" % (n, counts.get(n), c)
             for n, c in sorted(rec["counts"].items()) if counts.get(n) != c]
    R.case("types: the fixture's classes counted as gc.get_objects() counts them", probs)
    R.check("types: sources.python counts them", t["sources"]["python"] >= sum(rec["counts"].values()),
            str(t["sources"]))
    d = block_type(core, rec["dict"])
    R.check("types: the dict object is a dict", d.get("type") == "dict", str(d)[:500])
    keys = [p["allocation"] for p in d.get("points_to", []) if p.get("type") == "dict (keys)"]
    R.check("types: its keys table is a dict (keys)", len(keys) == 1, str(d.get("points_to"))[:800])
    lst = block_type(core, rec["orders_list"])
    R.check("types: the list of orders is a list", lst.get("type") == "list", str(lst)[:500])
    items = [p for p in lst.get("points_to", []) if p.get("type") == "list (items)"]
    R.check("types: its items are a list (items)", len(items) == 1, str(lst.get("points_to"))[:800])
    return counts


def check_paths(core, rec):
    """path names the attribute and the dict key it goes through."""
    for what, addr, want in (("orders[7].name", rec["order7_name"], "__main__.Order (values).name"),
                             ("table['k5']", rec["k5_value"], "dict (keys)['k5']")):
        r = hstest.run([HS, "path", core, "%#x" % addr], timeout=600)
        R.check("path to %s goes through %s" % (what, want), r.rc == 0 and want in r.out,
                r.describe() + "\n" + r.out[-1500:])


def check_leaks(core, rec):
    """The collector is disabled and each Node pair refers only to itself:
    Python garbage that only the collector's lists (GC heads) link.  The
    Holder's only reference is the one the fixture leaked through the C
    API.  Both leak; what the program holds does not."""
    lk, err = hs_json("leaks", core, "--quiet")
    t, _ = hs_json("types", core)
    leaked = {row["type"]: row["leaked_count"] for row in t["types"] if row["leaked_count"]}
    garbage = ("__main__.Headed", "__main__.Headed (values)",
               "__main__.Node", "__main__.Node (values)", "__main__.Holder",
               "__main__.Holder (values)", "__main__.Stale", "__main__.Stale (values)",
               "__main__.Dead", "__main__.Dead (values)", "__main__.Popped",
               "__main__.Popped (values)", "__main__.Valued", "__main__.Valued (values)")
    nodes = 2 * rec["cycles"]
    R.check("leaks: at least 95%% of the %d cycle Nodes leaked (the collector's links are no references)" % nodes,
            leaked.get("__main__.Node", 0) >= 0.95 * nodes, str(leaked))
    R.check("leaks: the Holder leaked", leaked.get("__main__.Holder") == 1, str(leaked))
    # the Stale's address sits in the rounding past a live tuple's end:
    # a stale word, no reference
    R.check("leaks: the Stale leaked, its address in a live tuple's rounding notwithstanding",
            leaked.get("__main__.Stale") == 1, str(leaked))
    shown = hstest.run([HS, "show", core, "%#x" % (rec["stale_pair"] - 16)], timeout=600)
    R.check("show: the tuple's rounding is not listed as a pointer to the Stale",
            shown.rc == 0 and "tuple" in shown.out and
            "points to:" in shown.out and
            ("%#x" % (rec["stale"] - 32)) not in shown.out.split("points to:")[-1] and
            "+0x38 " not in shown.out.split("points to:")[-1],
            shown.describe() + "\n" + shown.out[-1500:])
    # the Popped's address stays in the slot past the live list's end
    R.check("leaks: the Popped leaked, its address in the slot past a live list's end notwithstanding",
            leaked.get("__main__.Popped") == 1, str(leaked))
    # value objects' words are no references: a float's bits, a bytes'
    # contents, a str's rounding and the unset bits of its state word
    R.check("leaks: the 3 Valued leaked, their addresses in a float, a bytes and a str's "
            "rounding notwithstanding", leaked.get("__main__.Valued") == 3, str(leaked))
    for what, addr in (("the garbage list", rec["big"] - 16),
                       ("its item array, that a live str's state word points into",
                        rec["big_items"])):
        shown = hstest.run([HS, "show", core, "%#x" % addr], timeout=600)
        R.check("leaks: %s is leaked" % what,
                shown.rc == 0 and re.search(r"^class: (leak-root|indirect)$", shown.out, re.M),
                shown.describe() + "\n" + shown.out[-800:])
    shown = hstest.run([HS, "show", core, "%#x" % rec["state_str"]], timeout=600)
    R.check("show: the str's state word is not listed as a pointer",
            shown.rc == 0 and "type: str" in shown.out and
            shown.out.split("points to:")[-1].strip() == "nothing",
            shown.describe() + "\n" + shown.out[-800:])
    shown = hstest.run([HS, "show", core, "%#x" % (rec["kept"] - 32)], timeout=600)
    R.check("leaks: an object held by the values its instance's dict took over is reachable",
            shown.rc == 0 and "__main__.Kept" in shown.out and "class: reachable" in shown.out,
            shown.describe() + "\n" + shown.out[-800:])
    if rec.get("legacy_data"):
        shown = hstest.run([HS, "show", core, "%#x" % rec["legacy_data"]], timeout=600)
        R.check("leaks: a legacy str's characters, a block of their own, are reachable through it",
                shown.rc == 0 and "class: reachable" in shown.out,
                shown.describe() + "\n" + shown.out[-800:])
    # words of a live buffer point into the Headed's GC head and
    # pre-header, where nothing of CPython's points
    R.check("leaks: the Headed leaked, words into its GC head and pre-header notwithstanding",
            leaked.get("__main__.Headed") == 1, str(leaked))
    # the Dead's address stays in the frame slot of a call that returned:
    # above the top of CPython's frame stack, a stale word
    R.check("leaks: the Dead leaked, its address in a returned call's frame slot notwithstanding",
            leaked.get("__main__.Dead") == 1, str(leaked))
    shown = hstest.run([HS, "show", core, "%#x" % (rec["dead"] - 32)], timeout=600)
    R.check("show: the Dead is pointed to by a stale word above the top of the python frames",
            shown.rc == 0 and "__main__.Dead" in shown.out and
            re.search(r"python frames at 0x[0-9a-f]+, above the top", shown.out) is not None,
            shown.describe() + "\n" + shown.out[-1500:])
    check_free_lists(core, rec)
    R.check("leaks: all %d cycle Nodes leaked" % nodes,
            leaked.get("__main__.Node", 0) == nodes, str(leaked))
    # the types the program holds (a dict's keys: json's garbage has one)
    held = ("__main__.Order", "__main__.Order (values)", "__main__.Slotted")
    R.check("leaks: what the program holds is not leaked",
            not any(leaked.get(n) for n in held), str(leaked))
    table = hstest.run([HS, "show", core, "%#x" % (rec["dict"] - 16)], timeout=600)
    R.check("leaks: the %d-entry dict is reachable" % rec["dict_entries"],
            table.rc == 0 and "class: reachable" in table.out, table.describe() + "\n" + table.out[-800:])
    other = sum(c for n, c in leaked.items() if n not in garbage)
    used = sum(row["count"] for row in t["types"])
    R.check("leaks: other leaked blocks under 0.1%% of the typed ones (%d of %d)" % (other, used),
            other * 1000 <= used, str(leaked))
    sm = lk["summary"]
    R.check("leaks: the pyobject rule holds the objects past their GC heads",
            sm["via"]["pyobject"]["count"] > rec["orders"] + rec["slotted"], str(sm["via"]))


def check_free_lists(core, rec):
    """A garbage list and a garbage dict (its keys table too) taken from
    CPython's free lists: the slots above the lists' counts keep their
    addresses, dead words (stale roots), so they are leaked."""
    fl = rec["free_list"]
    for what, addr, root in (
            ("list", fl["list"] - 16, "python free list of lists"),
            ("dict", fl["dict"] - 16, "python free list of dicts"),
            ("dict's keys table", fl["keys"], "python free list of dict keys")):
        shown = hstest.run([HS, "show", core, "%#x" % addr], timeout=600)
        # (a cycle: which of its blocks is the leak's root is arbitrary)
        R.check("leaks: a garbage %s taken from CPython's free list is leaked" % what,
                shown.rc == 0 and
                re.search(r"^class: (leak-root|indirect)$", shown.out, re.M) is not None,
                shown.describe() + "\n" + shown.out[-800:])
        R.check("show: the garbage %s is pointed to by a stale slot of the %s" % (what, root),
                shown.rc == 0 and
                re.search(r"%s at 0x[0-9a-f]+, slots above its count" % root, shown.out) is not None,
                shown.describe() + "\n" + shown.out[-1500:])


def check_outside(core, rec):
    """The Holder's count was raised through the C API and nothing holds
    that reference: it is the one object held from outside the heap."""
    lk, _ = hs_json("leaks", core, "--quiet")
    out = lk.get("python_outside") or {}
    objs = out.get("objects", [])
    holder = [o for o in objs if int(o["address"], 16) + 32 == rec["held"]]
    R.check("leaks: the Holder is held from outside the heap (refcount 1, 0 references found)",
            len(holder) == 1 and holder[0]["refcnt"] == 1 and holder[0]["found"] == 0 and
            holder[0]["type"] == "__main__.Holder", str(objs)[:800])
    R.check("leaks: nothing else is (%d objects checked)" % out.get("checked", 0),
            out.get("count") == 1 and out.get("checked", 0) > rec["orders"], str(out)[:800])


def check_redact(core):
    """A redacted copy (no payload) analyzes the same: pymalloc's pools
    and arena table, the objects' types, the leaks, the objects held from
    outside and the frame stacks' tops; the
    strings the program made are gone."""
    red = os.path.join(WORK, "redacted.core")
    r = hstest.run([HS, "redact", core, "-o", red], timeout=600)
    if not R.check("redact: wrote a copy", r.rc == 0, r.describe()):
        return
    for cmd in ("info", "types", "leaks", "frag"):
        a, _ = hs_json(cmd, core)
        b, _ = hs_json(cmd, red)
        a.pop("core", None)
        b.pop("core", None)
        R.check("redact: %s the same on the redacted copy" % cmd, a == b,
                "first differing key: %s" % next((k for k in a if a.get(k) != b.get(k)), None))
    with open(red, "rb") as f:
        data = f.read()
    R.check("redact: the program's strings are gone", b"order-1234" not in data and
            b"s999-9" not in data)


def check_summary(core):
    """A summary names types (tp_name), never data: not the strings the
    program made, nor the dict keys and attribute names that `path`
    shows."""
    out = os.path.join(WORK, "summary.json")
    r = hstest.run([HS, "summary", core, "-o", out], timeout=600)
    if not R.check("summary: written", r.rc == 0, r.describe()):
        return
    with open(out, "rb") as f:
        data = f.read()
    doc = json.loads(data)
    labels = {t["label"] for t in doc["types"]}
    R.check("summary: the fixture's classes are rows, by type name",
            {"__main__.Order", "dict", "list"} <= labels, sorted(labels)[:40])
    planted = [s for s in (b"order-1234", b"s999-9", b"k19999", b"['k5']", b"(values).name")
               if s in data]
    R.check("summary: no string, dict key or attribute name of the program", not planted,
            "found %s" % planted)


def same_with(core, env, what, commands):
    """commands' output and warnings, the same with env as without."""
    for args in commands:
        runs = [hstest.run([HS] + args + [core], timeout=600, env=e) for e in (None, env)]
        label = "%s: %s" % (" ".join(args), what)
        if not R.check(label + " (both ran)", runs[0].rc == 0 and runs[1].rc == 0,
                       runs[0].describe() + " / " + runs[1].describe()):
            continue
        R.check(label, runs[0].out == runs[1].out and runs[0].err == runs[1].err,
                "output differs" if runs[0].out != runs[1].out else
                "%r against %r" % (runs[0].err[:300], runs[1].err[:300]))


def check_types_after(core):
    """With two threads the types (CPython's objects' among them) are made
    beside the graph's scan: the same output and warnings as with them
    made after it (HEAPSIFT_TEST_TYPES_AFTER=1)."""
    same_with(core, dict(os.environ, HEAPSIFT_TEST_TYPES_AFTER="1"),
              "the same with the types after the graph",
              [a + ["--threads", "2"] for a in
               (["leaks"], ["leaks", "--format", "json"], ["top", "--format", "json"],
                ["types", "--format", "json"])])


def check_narrow(core):
    """The objects' kinds take 16 bits a block when the types are few (as
    here): the same output, text and JSON, as with them kept in 32 bits
    (HEAPSIFT_TEST_TYPES_NARROW_MAX=2, fewer types than this heap has)."""
    same_with(core, dict(os.environ, HEAPSIFT_TEST_TYPES_NARROW_MAX="2"),
              "the same with the kinds in 32 bits",
              (["leaks"], ["leaks", "--format", "json"], ["top", "--format", "json"],
               ["types", "--format", "json"], ["list", "--state", "all", "--format", "json"]))


def find_chap():
    c = os.environ.get("HS_CHAP")
    if c:
        return c if os.access(c, os.X_OK) else None
    import glob
    found = sorted(glob.glob("/var/cache/heapsift-chap/chap-*/build/chap"))
    return found[-1] if found else None


def check_chap(core, info):
    """chap (built by scripts/build-chap.sh; skipped without it) reads the
    same pools.  It counts glibc's thread-cache chunks as used (heapsift:
    free, `tcache`), and it counts each pool with no block in use as one
    free 16 KiB allocation (it reads obmalloc's arena objects): a pool an
    arena has not carved yet (no header for heapsift to find: heapsift has
    nothing there), or an empty pool back on its arena's free list
    (heapsift: one free `pymalloc_pool` block past its header).  So
    chap's used count is heapsift's plus the tcache chunks, and its free
    count heapsift's less them plus the pools not carved yet."""
    chap = find_chap()
    if not chap:
        R.skip("chap: pymalloc's blocks side by side", "chap is not built (scripts/build-chap.sh, or HS_CHAP)")
        return
    cmds = os.path.join(WORK, "chap.cmds")
    with open(cmds, "w") as f:
        f.write("count used\ncount free\nsummarize free\n")
    with open(cmds) as f:
        r = hstest.run([chap, core], timeout=600, stdin=f)
    out = r.out
    # count used, count free, then summarize free's own total
    counts = [int(x) for x in re.findall(r"^(\d+) allocations use", out, re.M)][:2]
    pools = re.search(r"allocations of size 0x4000 have (\d+) instances", out)
    if not R.check("chap: counted used and free", len(counts) == 2, out[-800:]):
        return
    t = info["allocator"]["totals"]
    tcache = t["by_where"].get("tcache", {}).get("count", 0)
    empty = t["by_where"].get("pymalloc_pool", {}).get("count", 0)
    uncarved = (int(pools.group(1)) if pools else 0) - empty
    R.check("chap: used %d = heapsift's %d + %d tcache chunks" % (counts[0], t["used_count"], tcache),
            counts[0] == t["used_count"] + tcache)
    R.check("chap: free %d = heapsift's %d - %d tcache chunks + %d pools not carved yet"
            % (counts[1], t["free_count"], tcache, uncarved),
            counts[1] == t["free_count"] - tcache + uncarved)


def read_u64(core, addr):
    segs = corrupt_core.load_segments(core)
    off = corrupt_core.vaddr_to_offset(segs, addr, 8)
    with open(core, "rb") as f:
        f.seek(off)
        return int.from_bytes(f.read(8), "little")


def patched(core, name, patches):
    out = os.path.join(WORK, name + ".core")
    shutil.copyfile(core, out)
    segs = corrupt_core.load_segments(out)
    with open(out, "r+b") as f:
        for addr, value in patches:
            f.seek(corrupt_core.vaddr_to_offset(segs, addr, 8))
            f.write(value.to_bytes(8, "little"))
    return out


def pools_of(core):
    """Pool addresses with blocks in use, from list's pymalloc blocks."""
    r = hstest.run([HS, "list", core, "--format", "json"], timeout=600)
    pools = {}
    for a in json.loads(r.out)["allocations"]:
        if a["where"] == "pymalloc":
            p = int(a["address"], 16) & ~(POOL - 1)
            pools[p] = pools.get(p, 0) + 1
    return pools


def check_bad_free_list(core, rec):
    """The count of CPython's free list of lists corrupted (past the
    array; 0, an empty list): the array is not taken for one, its slots
    are roots as any global's, the garbage list reachable through its
    slot as before the rule; no crash."""
    addr = "%#x" % (rec["free_list"]["list"] - 16)
    shown = hstest.run([HS, "show", core, addr], timeout=600)
    m = re.search(r"python free list of lists at (0x[0-9a-f]+), slots above", shown.out)
    if not R.check("bad input: the free list of lists found", m, shown.out[-800:]):
        return
    first = int(m.group(1), 16)
    # its count: the int after the 80 slots, the slots below the first
    # stale one as many
    at = [first - 8 * c + 640 for c in range(1, 81)
          if read_u64(core, first - 8 * c + 640) & 0xffffffff == c]
    if not R.check("bad input: the free list's count found", len(at) == 1, str(at)):
        return
    # the words around it, all the garbage list's address: every one a
    # candidate array, more than heapsift checks (a bound on the work)
    segs = corrupt_core.load_segments(core)
    seg = corrupt_core.segment_of(segs, first)
    lo = max(seg.vaddr, first - 24576) & ~7
    hi = min(seg.vaddr + seg.filesz, first + 24576) & ~7
    bad = patched(core, "freefill", [(a, rec["free_list"]["list"]) for a in range(lo, hi, 8)])
    r = hstest.run([HS, "leaks", bad, "--format", "json", "--quiet"], timeout=600)
    R.check("bad input: %d words of the interpreter's data all point to a list: analyzed" %
            ((hi - lo) // 8), r.rc == 0 and '"summary"' in r.out, r.describe() + r.err[-500:])
    for value, what in ((0x7fffffff, "past the array"), (0, "0, an empty list")):
        bad = patched(core, "freecount", [(at[0], value)])
        r = hstest.run([HS, "show", bad, addr], timeout=600)
        R.check("bad input: the free list's count %s: no free list, the garbage list reachable "
                "through its slot as any global's" % what,
                r.rc == 0 and "python free list" not in r.out and
                re.search(r"^class: reachable$", r.out, re.M) is not None and
                "global _PyRuntime" in r.out, r.describe() + "\n" + r.out[-800:])


def check_bad_str_length(core, rec):
    """A str whose length no longer fits its block (a corrupt core): it is
    no value object then, and its block is scanned whole, the state word
    read as a pointer again (into the garbage list's items); no crash."""
    addr = "%#x" % rec["state_str"]
    bad = patched(core, "strlength", [(rec["state_str"] + 16, 10 ** 9)])
    r = hstest.run([HS, "show", bad, addr], timeout=600)
    pointed = r.out.split("points to:")[-1]
    R.check("bad input: a str's length past its block: scanned whole, its state word a pointer again",
            r.rc == 0 and "points to:" in r.out and "+0x20" in pointed and
            ("%#x" % rec["big_items"]) in pointed, r.describe() + "\n" + r.out[-800:])


def check_bad(core, py, rec, counts):
    check_bad_free_list(core, rec)
    check_bad_str_length(core, rec)
    pools = pools_of(core)
    # a pool with room left: its free list's head is not null
    open_pools = [p for p in sorted(pools) if read_u64(core, p + 8)]
    if not R.check("bad input: the core has a pool with free blocks", open_pools):
        return
    p = open_pools[len(open_pools) // 2]
    head = read_u64(core, p + 8)
    bad = patched(core, "freelist", [(head, p + 16)])
    info, err = hs_json("info", bad)
    got = info.get("pymalloc") or {}
    R.check("bad input: a broken free list: warned, partial, that pool's %d blocks left out" % pools[p],
            got.get("bad_pools") == 1 and info["allocator"]["partial"] and
            any("free list goes astray" in w for w in info["warnings"]) and
            got.get("used_blocks") == py["used_blocks"] - pools[p],
            "%s %s" % (info["warnings"], {k: got.get(k) for k in ("bad_pools", "used_blocks")}))

    # a header overwritten between two pools of one arena
    inner = [q for q in sorted(pools) if q - POOL in pools and q + POOL in pools]
    q = inner[len(inner) // 2]
    bad = patched(core, "header", [(q + 40, 0x7FFF0001_7FFF0001)])
    info, err = hs_json("info", bad)
    got = info.get("pymalloc") or {}
    R.check("bad input: a pool header overwritten: warned, partial, its blocks left out",
            any("have no pool header" in w for w in info["warnings"]) and
            info["allocator"]["partial"] and
            got.get("used_blocks") == py["used_blocks"] - pools[q],
            "%s %s" % (info["warnings"], got.get("used_blocks")))

    # an arena's record in obmalloc's arena table that no longer fits its
    # pools: the table is not trusted, frag says what it cannot split
    d, _ = hs_json("frag", core)
    table = d["pymalloc"]["arena_table"]
    if R.check("bad input: the arena table found", table):
        a = d["pymalloc"]["arenas"][0]
        bad = patched(core, "table", [(int(table, 16) + 48 * a["index"], 0x1000)])
        r = hstest.run([HS, "frag", bad, "--format", "json"], timeout=600)
        got = json.loads(r.out)["pymalloc"] if r.rc == 0 else {}
        R.check("bad input: an arena's record corrupted: no table, unused pools and alignment unknown, the rest as before",
                got.get("arena_table") is None and got.get("unused_pools_bytes") is None and
                got.get("alignment_bytes") is None and
                got.get("blocks_bytes") == d["pymalloc"]["blocks_bytes"] and
                got.get("headers_bytes") == d["pymalloc"]["headers_bytes"],
                r.describe() + " " + str({k: v for k, v in got.items() if k != "arenas"}))

    # a frame chunk whose size word disagrees with its thread's limit: no
    # stack is found there, and the chunk is unexplained memory again,
    # every word a root (the Dead is held; nothing else changes)
    shown = hstest.run([HS, "show", core, "%#x" % (rec["dead"] - 32)], timeout=600)
    m = re.search(r"python frames at (0x[0-9a-f]+), above the top", shown.out)
    if R.check("bad input: the Dead's frame chunk found", m, shown.out[-800:]):
        chunk = int(m.group(1), 16) - 24
        bad = patched(core, "chunk", [(chunk + 8, read_u64(core, chunk + 8) + 4096)])
        lk, err = hs_json("leaks", bad, "--quiet")
        t, _ = hs_json("types", bad)
        leaked = {row["type"]: row["leaked_count"] for row in t["types"] if row["leaked_count"]}
        shown = hstest.run([HS, "show", bad, "%#x" % (rec["dead"] - 32)], timeout=600)
        R.check("bad input: a frame chunk's size corrupted: the chunk is unexplained memory, the Dead held",
                lk.get("summary") and not leaked.get("__main__.Dead") and
                leaked.get("__main__.Holder") == 1 and "anonymous memory at" in shown.out,
                "%s %s" % (leaked, shown.out[-800:]))

    # an Order whose ob_type points outside the core; the list of orders
    # still holds it
    lst = block_type(core, rec["orders_list"])
    items = [int(x["allocation"], 16) for x in lst.get("points_to", [])
             if x.get("type") == "list (items)"]
    if not R.check("bad input: the orders' item array found", items):
        return
    victim = read_u64(core, items[0] + 8 * 7)
    bad = patched(core, "obtype", [(victim + 8, 0xdead0000)])
    r = hstest.run([HS, "types", bad, "--format", "json"], timeout=600)
    ok = r.rc == 0
    got = {row["type"]: row["count"] for row in json.loads(r.out)["types"]} if ok else {}
    want = dict(counts)
    want["__main__.Order"] -= 1
    changed = {n: (got.get(n), c) for n, c in rec["counts"].items() if got.get(n) != want[n]}
    R.check("bad input: an ob_type outside the core: that object untyped, warned, the rest unchanged",
            ok and not changed and "no object starts" in r.err,
            "%s %s %s" % (r.describe(), changed, r.err[-500:]))


def main():
    if not os.path.exists(PYTHON) or not shutil.which("gdb"):
        R.skip("python", "needs %s and gdb" % PYTHON)
        return R.finish()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    try:
        core, rec, stats, blocks = take()
    except hstest.HsError as e:
        R.check("the fixture's core and the interpreter's counts", False, str(e))
        return R.finish()
    print("python %s, sys.getallocatedblocks() %d" % (rec["python"], blocks))
    py = check_info(core, stats, blocks)
    check_frag(core, stats)
    counts = check_types(core, rec)
    check_paths(core, rec)
    check_leaks(core, rec)
    check_outside(core, rec)
    check_redact(core)
    check_summary(core)
    check_narrow(core)
    check_types_after(core)
    if py:
        check_chap(core, hs_json("info", core)[0])
    if py:
        check_bad(core, py, rec, counts)
    status = R.finish()
    if status == 0:
        shutil.rmtree(WORK, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
