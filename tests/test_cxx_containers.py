#!/usr/bin/env python3
"""Ground-truth tests of heapsift's C++ container view and of the types it
gives libstdc++'s containers' blocks (tests/cxx_containers.cmake).

cx_containers (tests/fixtures/cx_containers.cpp) records every container
it has, with its element count and the bytes it must contribute to its
type's row (analyzers/containers.h says what each counts).  From that
record this test computes, per container type, what `heapsift containers`
must say: count, elements, the histogram of element counts (0, 1, 2-4,
5-8, 9-16, ...), bytes in elements, unused capacity and bucket arrays,
and for N in 1, 2, 4, 8, 16 the containers of at most N elements and
their bytes; JSON and text.  `types` must name the nodes of its maps and
hash tables by their value type.

cx_oom (tests/fixtures/cx_oom.cpp) grows a std::map<long, Session *>
under a limit on its address space until operator new throws
std::bad_alloc and it aborts; the kernel's core is read: at least 99% of
the blocks typed, and the rows of `types` for the map's nodes, the
Sessions, their strings' and vectors' buffers equal to the record, as
are the rows of `containers`.

A copy of cx_containers' core with five containers made to lie (a cycle
in a hash table's nodes, a vector's end past its capacity, a string's
capacity past its buffer, a tree's count past the heap, a deque's node
outside its map): those five fail their checks, the rest is unchanged.

The JSON is checked against docs/schema.json too.

Usage: test_cxx_containers.py [-v]
Environment: HEAPSIFT, FIXTURES, WORKDIR (see hstest.py).
"""

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hstest  # noqa: E402
from test_schema import SCHEMA, validate  # noqa: E402

WORKDIR = os.path.join(hstest.WORKDIR, "cxx_containers")

# The fixture's labels and the names the DWARF of GCC's libstdc++ gives
# those types (the start of the name: the defaulted arguments follow).
LABELS = {
    "vector<int>": r"std::vector<int, ",
    "vector<vector<int>>": r"std::vector<std::vector<int, ",
    "string": r"std::__cxx11::basic_string<char, ",
    "vector<string>": r"std::vector<std::__cxx11::basic_string<char, ",
    "unordered_map<long,long>": r"std::unordered_map<long, long, ",
    "vector<unordered_map<long,long>>": r"std::vector<std::unordered_map<long, long, ",
    "unordered_set<string>": r"std::unordered_set<std::__cxx11::basic_string<char, ",
    "map<int,long>": r"std::map<int, long, ",
    "vector<map<int,long>>": r"std::vector<std::map<int, long, ",
    "set<string>": r"std::set<std::__cxx11::basic_string<char, ",
    "deque<int>": r"std::deque<int, ",
    "vector<deque<int>>": r"std::vector<std::deque<int, ",
    "vector<double>": r"std::vector<double, ",
    "vector<long>": r"std::vector<long, ",
    "map<int,int>": r"std::map<int, int, ",
}

# the short names (without the defaulted arguments) of some
SHORT = {
    "string": "std::string",
    "vector<int>": "std::vector<int>",
    "vector<vector<int>>": "std::vector<std::vector<int> >",
    "unordered_set<string>": "std::unordered_set<std::string>",
    "map<int,long>": "std::map<int, long>",
    "vector<string>": "std::vector<std::string>",
}

SBO = [1, 2, 4, 8, 16]
OOM_LIMIT = 64 << 20    # RLIMIT_AS of cx_oom, bytes
TYPED_MIN = 0.99


def bucket(n):
    """(min, max) of the histogram bucket of n elements: 0, 1, 2-4, 5-8,
    9-16, ... (the bounds, not heapsift's function)."""
    if n <= 1:
        return (n, n)
    hi = 4
    while n > hi:
        hi *= 2
    return (2 if hi == 4 else hi // 2 + 1, hi)


def expected_rows(record):
    rows = {}
    for c in record["containers"]:
        if c["inline"]:
            continue
        r = rows.setdefault(c["label"], {
            "kind": c["kind"], "count": 0, "elements": 0, "element_bytes": 0,
            "unused_bytes": 0, "bucket_bytes": 0, "histogram": {},
            "small_buffer": {n: [0, 0] for n in SBO}})
        r["count"] += 1
        r["elements"] += c["size"]
        for k in ("element_bytes", "unused_bytes", "bucket_bytes"):
            r[k] += c[k]
        b = bucket(c["size"])
        r["histogram"][b] = r["histogram"].get(b, 0) + 1
        for n in SBO:
            if c["size"] <= n:
                r["small_buffer"][n][0] += 1
                r["small_buffer"][n][1] += c["element_bytes"] + c["unused_bytes"]
    return rows


def label_of(name):
    """The fixture's label of a container type heapsift names, or None."""
    best = None
    for label, prefix in LABELS.items():
        if name.startswith(prefix) and (best is None or len(prefix) > len(LABELS[best])):
            best = label
    return best


def check_containers(ck, snap, record, what):
    try:
        out = hstest.heapsift_json("containers", snap)
    except hstest.HsError as e:
        ck.check("%s: containers --format json" % what, False, str(e))
        return
    errors = []
    validate(out, SCHEMA["commands"]["containers"], "containers", errors)
    ck.case("%s: containers --format json against docs/schema.json" % what, errors)
    want = expected_rows(record)
    got = {}
    problems = []
    for row in out["containers"]:
        label = label_of(row["type"])
        if label is None or label in got:
            problems.append("a row no recorded container explains: %s" % row["type"])
            continue
        got[label] = row
    for label in want:
        if label not in got:
            problems.append("no row for %s (%s...)" % (label, LABELS[label]))
    ck.case("%s: one row per recorded container type" % what, problems)
    for label, w in sorted(want.items()):
        g = got.get(label)
        if g is None:
            continue
        problems = []
        if label in SHORT and g["name"] != SHORT[label]:
            problems.append("name %r, not %r" % (g["name"], SHORT[label]))
        for k in ("kind", "count", "elements", "element_bytes", "unused_bytes",
                  "bucket_bytes"):
            if g[k] != w[k]:
                problems.append("%s: %s, recorded %s" % (k, g[k], w[k]))
        hist = {(b["min"], b["max"]): b["count"] for b in g["histogram"]}
        if hist != w["histogram"]:
            problems.append("histogram %s, recorded %s" % (sorted(hist.items()),
                                                            sorted(w["histogram"].items())))
        sbo = {s["n"]: [s["count"], s["bytes"]] for s in g["small_buffer"]}
        if sbo != w["small_buffer"]:
            problems.append("small_buffer %s, recorded %s" % (sbo, w["small_buffer"]))
        ck.case("%s: %s: name, count, elements, bytes, histogram, small buffers"
                % (what, label),
                problems)
    inline = sum(1 for c in record["containers"] if c["inline"])
    ck.check("%s: strings in their inline buffer (%d) not counted" % (what, inline),
             out["inline_strings"] == inline,
             "inline_strings %s" % out["inline_strings"])
    ck.check("%s: no container fails its checks" % what, out["invalid"] == 0,
             "invalid %s" % out["invalid"])
    ck.check("%s: count is the rows' sum" % what,
             out["count"] == sum(r["count"] for r in out["containers"]))

    # text: every row, its count and its histogram line
    r = hstest.run_heapsift(["containers", snap.core, "--exe", snap.binary])
    problems = [] if r.rc == 0 else [r.describe()]
    for row in out["containers"]:
        head = "%s (%s)\n  %d %s, %d elements:" % (
            row["name"], row["kind"], row["count"],
            "container" if row["count"] == 1 else "containers", row["elements"])
        if head not in r.out:
            problems.append("no %r" % head)
    ck.case("%s: text shows every row" % what, problems)


def check_node_types(ck, snap, record, what):
    """The nodes of the maps, hash tables and lists are named by their
    value, shared_ptr's control blocks by what they hold."""
    try:
        out = hstest.heapsift_json("types", snap)
    except hstest.HsError as e:
        ck.check("%s: types --format json" % what, False, str(e))
        return
    ck.check("%s: types: no block given two types" % what, out["conflicts"] == 0,
             "conflicts %s" % out["conflicts"])
    rows = {r["type"]: r for r in out["types"] if r["type"]}
    want = {
        "std::_Rb_tree_node<std::pair<int const, long> >":
            sum(c["size"] for c in record["containers"] if c["label"] == "map<int,long>"),
        "std::_Rb_tree_node<std::pair<int const, int> >":
            sum(c["size"] for c in record["containers"] if c["label"] == "map<int,int>"),
        "std::__detail::_Hash_node<std::pair<long const, long>, false>":
            sum(c["size"] for c in record["containers"]
                if c["label"] == "unordered_map<long,long>"),
        "std::_List_node<long>": record["list"],
        # g_unique's and g_shared2's (g_shared's is in its control block)
        "Bag": 3,
        "std::_Sp_counted_ptr_inplace<Bag, std::allocator<void>, "
        "(__gnu_cxx::_Lock_policy)2>": 1,
        "std::_Sp_counted_ptr<Bag*, (__gnu_cxx::_Lock_policy)2>": 1,
    }
    for name, n in want.items():
        got = rows.get(name, {}).get("count")
        ck.check("%s: types: %d blocks of %s" % (what, n, name), got == n,
                 "count %s; rows %s" % (got, sorted(rows)[:40]))
    for base in ("std::_Rb_tree_node_base", "std::__detail::_Hash_node_base",
                 "std::__detail::_List_node_base"):
        ck.check("%s: types: no block left as the base node %s" % (what, base),
                 base not in rows, str(rows.get(base)))


def read_u64(core, vaddr):
    r = hstest.run([sys.executable, os.path.join(HERE, "corrupt_core.py"), core,
                    "--read", "%#x:8" % vaddr])
    if r.rc != 0:
        raise hstest.HsError(r.describe())
    return int.from_bytes(bytes.fromhex(r.out.strip()), "little")


# label of the container each corruption breaks
BROKEN = {"unordered_map<long,long>": 1, "vector<int>": 1, "string": 1,
          "map<int,long>": 1, "deque<int>": 1}


def check_corrupt(ck, snap, record):
    """A copy of the core where five containers lie: a hash table whose
    first node points to itself (a cycle), a vector whose end is past its
    capacity, a string whose capacity passes its buffer, a tree with more
    nodes than the heap has blocks, a deque whose first node is outside its
    map.  Each fails its checks; the others are counted as before."""
    cor = {k: hstest.hx(v) for k, v in record["corrupt"].items()}
    node = read_u64(snap.core, cor["hash_node"])
    eos = read_u64(snap.core, cor["vector_eos"])
    dmap = read_u64(snap.core, cor["deque_map"])
    out_core = snap.core + ".corrupt"
    argv = [sys.executable, os.path.join(HERE, "corrupt_core.py"), snap.core, out_core,
            "--u64", "%#x=%#x" % (node, node),
            "--u64", "%#x=%#x" % (cor["vector_finish"], eos + 4096),
            "--u64", "%#x=%#x" % (cor["string_cap"], 1 << 40),
            "--u64", "%#x=%#x" % (cor["tree_count"], 1 << 40),
            "--u64", "%#x=%#x" % (cor["deque_node"], dmap - 8)]
    r = hstest.run(argv)
    if r.rc != 0:
        ck.check("corrupt: the copy of the core", False, r.describe())
        return
    bad = hstest.Snapshot(snap.name, snap.binary, out_core, None, None, snap.kind)
    try:
        out = hstest.heapsift_json("containers", bad)
    except hstest.HsError as e:
        ck.check("corrupt: containers --format json", False, str(e))
        return
    ck.check("corrupt: the five that lie fail their checks", out["invalid"] == 5,
             "invalid %s" % out["invalid"])
    want = expected_rows(record)
    got = {label_of(r["type"]): r for r in out["containers"]}
    problems = []
    for label, w in want.items():
        n = w["count"] - BROKEN.get(label, 0)
        g = got.get(label, {}).get("count")
        if g != n:
            problems.append("%s: %s, expected %d" % (label, g, n))
    ck.case("corrupt: the other containers counted as before", problems)
    os.unlink(out_core)


# ------------------------------------------------------------------ cx_oom


def oom_core(ck):
    """Run cx_oom until it aborts on std::bad_alloc; the kernel's core
    (a Snapshot) and the record, or None when it cannot be had."""
    ok, why = hstest.kernel_cores_possible()
    if not ok:
        ck.skip("cx_oom", "no kernel core: %s" % why)
        return None, None
    binary = hstest.fixture_path("cx_oom")
    kdir = os.path.join(WORKDIR, "cx_oom.kdir")
    os.makedirs(kdir, exist_ok=True)
    for f in os.listdir(kdir):
        os.unlink(os.path.join(kdir, f))
    record_path = os.path.join(WORKDIR, "cx_oom.rec")
    if os.path.exists(record_path):
        os.unlink(record_path)

    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (OOM_LIMIT, OOM_LIMIT))
        soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))

    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_") and k not in ("LD_PRELOAD", "GLIBC_TUNABLES")}
    env["HS_RECORD"] = record_path
    p = subprocess.run([binary], cwd=kdir, env=env, preexec_fn=limits,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=300)
    dumped = [os.path.join(kdir, f) for f in os.listdir(kdir)]
    if p.returncode != -signal.SIGABRT or not dumped:
        ck.check("cx_oom: fixture: aborts with a core", False,
                 "exit %s, files %s" % (p.returncode, dumped))
        return None, None
    core = os.path.join(WORKDIR, "cx_oom.kcore")
    os.replace(max(dumped, key=os.path.getmtime), core)
    record = hstest.load_json(record_path, "record of cx_oom")
    ck.check("cx_oom: fixture: ran out of memory (std::bad_alloc)", record["oom"])
    return hstest.Snapshot("cx_oom", binary, core, record, record_path, "kernel"), record


NODE = "std::_Rb_tree_node<std::pair<long const, Session*> >"


def check_oom(ck, snap, record):
    try:
        types = hstest.heapsift_json("types", snap)
    except hstest.HsError as e:
        ck.check("cx_oom: types --format json", False, str(e))
        return
    ck.check("cx_oom: types: no block given two types", types["conflicts"] == 0,
             "conflicts %s" % types["conflicts"])
    share = types["typed_count"] / max(1, types["used_count"])
    print("cx_oom: %d of %d blocks typed (%.4f%%)" % (
        types["typed_count"], types["used_count"], 100 * share))
    ck.check("cx_oom: at least %d%% of the blocks typed" % (100 * TYPED_MIN),
             share >= TYPED_MIN,
             "%d of %d" % (types["typed_count"], types["used_count"]))
    by = {}
    for r in types["types"]:
        if r["type"]:
            c, b = by.get(r["type"], (0, 0))
            by[r["type"]] = (c + r["count"], b + r["bytes"])
    counts, nbytes = record["counts"], record["bytes"]
    for name, key in ((NODE, "node"), ("Session", "Session"), ("char", "string"),
                      ("long", "vector")):
        got = by.get(name, (0, 0))
        ck.check("cx_oom: types: %s: %d blocks, %d bytes" % (name, counts[key], nbytes[key]),
                 got == (counts[key], nbytes[key]),
                 "%s blocks, %s bytes; rows %s" % (got[0], got[1], sorted(by)[:20]))
    for r in types["types"]:
        if r["type"] == "Session":
            ck.check("cx_oom: types: Session's type_size is sizeof(Session)",
                     r["type_size"] == record["sizeof"]["Session"], str(r))
            break
    try:
        out = hstest.heapsift_json("containers", snap)
    except hstest.HsError as e:
        ck.check("cx_oom: containers --format json", False, str(e))
        return
    rows = {label_of(r["type"]) or r["type"]: r for r in out["containers"]}
    m = rows.get(r"std::map<long, Session*, std::less<long>, "
                 r"std::allocator<std::pair<long const, Session*> > >")
    ck.check("cx_oom: containers: the map, with every node",
             m is not None and m["count"] == 1 and m["elements"] == counts["node"],
             str(m))
    vec = [r for r in out["containers"] if r["type"].startswith("std::vector<long, ")]
    ck.check("cx_oom: containers: the Sessions' vectors",
             len(vec) == 1 and vec[0]["count"] == counts["vector"] and
             vec[0]["elements"] == record["elements"]["vector"], str(vec))
    s = [r for r in out["containers"]
         if r["type"].startswith("std::__cxx11::basic_string<char, ")]
    ck.check("cx_oom: containers: the Sessions' strings with a heap buffer",
             len(s) == 1 and s[0]["count"] == counts["string"] and
             s[0]["elements"] == record["elements"]["string"], str(s))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-v", action="store_true")
    ap.parse_args()
    ck = hstest.Checker()
    os.makedirs(WORKDIR, exist_ok=True)
    try:
        snap = hstest.take_core("cx_containers", WORKDIR, kernel=True)
        record = hstest.load_json(snap.record_path, "record of cx_containers")
        for s in [snap] + ([snap.kernel] if isinstance(snap.kernel, hstest.Snapshot) else []):
            what = "cx_containers (%s)" % s.kind
            check_containers(ck, s, record, what)
            check_node_types(ck, s, record, what)
        if not isinstance(snap.kernel, hstest.Snapshot):
            ck.skip("cx_containers (kernel)", str(snap.kernel))
        check_corrupt(ck, snap, record)
    except hstest.HsError as e:
        ck.check("cx_containers: core", False, str(e))
    try:
        osnap, orecord = oom_core(ck)
        if osnap:
            check_oom(ck, osnap, orecord)
            os.unlink(osnap.core)
    except (hstest.HsError, subprocess.TimeoutExpired) as e:
        ck.check("cx_oom: core", False, str(e))
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())
