#!/usr/bin/env python3
"""Ground-truth tests of heapsift's type inference.

For each type fixture (tests/fixtures/ty_c.c, ty_cxx.cpp and its stripped
build ty_cxx_stripped; see tests/types.cmake): run it until it stops, take
a core with gcore, and compare heapsift with the record the fixture wrote.
Every recorded allocation's label starts with the type heapsift must give
it ("dwarf:struct session", "vtable:shop::Cart", "none"; the format is
described at the top of ty_c.c and ty_cxx.cpp).

  - `list --state all`: the "type" of every recorded block, exactly;
    every used block has a "type" key;
  - `types`: per recorded type, the row's count, bytes, leaked count and
    bytes equal the record's; rows agree with `list`; typed totals,
    sources (vtable / RTTI / DWARF) and conflicts; retained bytes per type
    for the labelled groups (no double counting), and never below bytes;
  - `show`: the type, and the field name on the pointer between a holder
    block and the block it holds, on both sides (pointed_by, points_to);
  - `leaks`: the type of the group of every recorded leak root;
  - `leaks` and `top`, text and JSON, the same whether the modules' debug
    info is let go before the dominators (as it is) or kept to the end;
    `leaks`, `top`, `types` and `list` the same whether the types' table
    stays 16-bit while computing (as it does) or widens to 32 bits midway;
  - ty_cxx's `types` with a broken libstdc++.so.6 first in the library
    path (heapsift loads it only to demangle): one warning naming it, no
    class named by a vtable, the same blocks (skipped where the binary
    itself links libstdc++, as the sanitized build does).
In the stripped build only vtable types are expected (named by RTTI), DWARF
types and field names are not.

Checks named "NAME: fixture: ..." test the fixture's own claims (its self
checks, the leak classes its leak checks rely on, and, with gdb, that every
block said to be named by a vtable does start with a vptr into that class's
vtable).  A failure there is a test bug; every other check tests heapsift.

Blocks held only by a local variable of a stack frame (gap=frame) are typed
through that local (a DW_OP_fbreg location in an unwound frame).

Usage: test_types.py [-v] [FIXTURE ...]
Prints one line per check and "N passed, M failed" last; exit status 1 when
a check failed.  Environment: HEAPSIFT, FIXTURES, WORKDIR (see
hstest.py).  Cores, records and copies of the binaries (the CLI and
the fixtures, so that a rebuild during the run changes nothing) are kept
in WORKDIR/types.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hstest  # noqa: E402

HEAPSIFT = hstest.HEAPSIFT
FIXDIR = hstest.FIXTURES
WORKDIR = os.path.join(hstest.WORKDIR, "types")

# name -> (binary, stripped, binary gdb reads symbols from)
FIXTURES = {
    "ty_c": ("ty_c", False, None),
    "ty_cxx": ("ty_cxx", False, "ty_cxx"),
    "ty_cxx_stripped": ("ty_cxx_stripped", True, "ty_cxx"),
    "ty_leaks": ("ty_leaks", False, None),
}

# Fixtures of leaked blocks typed from their contents (rule 4 of
# analyzers/types.h): checked by check_inferred only, since a guess ("T?")
# counts as the type.
INFERRED = {"ty_leaks"}
INFERRED_MIN = 0.95

# Types no fixture owns: blocks of these that the fixture did not make
# (libc's, libstdc++'s) may be in their rows.
SHARED_TYPES = {"char", "unsigned char", "signed char", "void *", "char *"}

JOBS = max(2, min(8, os.cpu_count() or 2))
VERBOSE = False


def hx(s):
    return int(s, 16)


def base_name(name):
    """"struct buffer[4]" -> "struct buffer" (the `types` row's name);
    an inferred guess keeps its "?": "char[152]?" -> "char?"."""
    if name is None:
        return None
    m = re.match(r"^(.*)\[(\d+)\](\??)$", name)
    return m.group(1) + m.group(3) if m else name


# ------------------------------------------------------------ the record


class Expect:
    """What the label of one recorded allocation says."""

    def __init__(self, alloc, stripped):
        self.alloc = alloc
        self.addr = alloc["address"]
        self.usable = alloc["usable"]
        parts = alloc["label"].split(" -- ")
        head = parts[0].strip()
        self.desc = parts[1] if len(parts) > 1 else ""
        self.keys = {}
        for p in parts[2:]:
            k, _, v = p.partition("=")
            self.keys[k.strip()] = v.strip()
        if head == "none":
            self.source, names = "none", [None]
        else:
            self.source, _, rest = head.partition(":")
            names = [n.strip() for n in rest.split(" | ")]
        self.alternatives = len(names) > 1
        self.label_names = names
        if stripped:
            if "stripped" in self.keys:
                names = [self.keys["stripped"]]
            elif self.source != "vtable":
                names = [None]
        self.names = names
        self.has_field = "field" in self.keys
        field = self.keys.get("field")
        self.field = None if (stripped or field == "null") else field
        self.retained = self.keys.get("retained")
        self.gap = self.keys.get("gap")
        self.reach = alloc["expect"]

    def describe(self):
        return "%s [%s]" % (self.addr, self.desc)

    def want(self):
        return " or ".join("null" if n is None else repr(n) for n in self.names)


def leak_class(reach):
    return reach in ("leak-root", "indirect")


# ------------------------------------------------------------ heapsift


def heapsift_json(args, what):
    """Run heapsift with --format json; (parsed, None) or (None, problem)."""
    try:
        r = hstest.run([HEAPSIFT] + args + ["--format", "json"], timeout=120)
    except OSError as e:
        return None, "%s: cannot run %s: %s" % (what, HEAPSIFT, e)
    if r.rc != 0:
        return None, "%s failed: %s" % (what, r.describe())
    try:
        return json.loads(r.out), None
    except ValueError as e:
        return None, "%s: output is not JSON (%s): %r" % (what, e, r.out[:300])


# ------------------------------------------------------------ gdb oracle


def gdb_vtables(binary, core, addrs):
    """{address: class name} from gdb's `info symbol` of each block's first
    word ("vtable for shop::Cart + 16 in section ..."), or None when gdb
    is missing."""
    if not shutil.which("gdb") or not addrs:
        return None
    argv = ["gdb", "-batch", "-nx", "-q", binary, core]
    for a in addrs:
        argv += ["-ex", "echo @@%s\\n" % a, "-ex", "info symbol *(void **)%s" % a]
    r = hstest.run(argv, timeout=120)
    out, cur = {}, None
    for line in r.out.splitlines():
        if line.startswith("@@"):
            cur = line[2:].strip()
            continue
        m = re.match(r"^vtable for (.*?) \+ \d+ in section ", line)
        if cur and m:
            out[cur] = m.group(1)
            cur = None
    return out


# ------------------------------------------------------------ checks


def check_fixture(res, name, rec, exps, by_addr, gdb_binary, core):
    problems = list(rec.get("selfcheck", []))
    if rec.get("mallinfo2") != rec.get("mallinfo2_before_record"):
        problems.append("writing the record allocated: mallinfo2 %s before, %s after"
                        % (rec.get("mallinfo2_before_record"), rec.get("mallinfo2")))
    addrs = [e.addr for e in exps]
    if len(set(addrs)) != len(addrs):
        problems.append("an address is recorded twice")
    res.case("%s: fixture: self checks" % name, problems)

    # char[N]: N is the usable size, which the fixture cannot know when
    # it writes the label
    problems = []
    for e in exps:
        for n in e.names:
            m = re.match(r"^char\[(\d+)\]$", n or "")
            if m and int(m.group(1)) != e.usable:
                problems.append("%s: label says %s, usable size is %d"
                                % (e.describe(), n, e.usable))
    res.case("%s: fixture: char buffer sizes" % name, problems)

    # the leak checks below rely on the fixture's leak classes
    problems = []
    for e in exps:
        got = by_addr.get(e.addr, {}).get("reach")
        if got != e.reach:
            problems.append("%s: recorded as %s, heapsift says %s"
                            % (e.describe(), e.reach, got))
    res.case("%s: fixture: leak classes as recorded" % name, problems)

    if gdb_binary:
        vt = [e for e in exps if e.source == "vtable"]
        seen = gdb_vtables(gdb_binary, core, [e.addr for e in vt])
        if seen is None:
            res.skip("%s: fixture: vptrs (gdb)" % name, "gdb is not installed")
        else:
            problems = []
            for e in vt:
                want = base_name(e.label_names[0])
                if want.startswith("slab of "):  # its first object's class
                    want = want[len("slab of "):]
                if seen.get(e.addr) != want:
                    problems.append("%s: gdb finds the first word in the vtable of %r, "
                                    "the label says %r" % (e.describe(), seen.get(e.addr), want))
            res.case("%s: fixture: every vtable block starts with its class's vptr (gdb)"
                     % name, problems)


def check_list(res, name, exps, lst, by_addr):
    problems = []
    for a in lst["allocations"]:
        if a.get("state") == "used" and "type" not in a:
            problems.append("%s: used, but no \"type\" key" % a.get("address"))
    res.case("%s: list: every used block has a type key" % name, problems[:10])

    for e in exps:
        case = "%s: list: %s is %s" % (name, e.describe(), e.want())
        a = by_addr.get(e.addr)
        if a is None:
            res.case(case, ["not listed"])
            continue
        got = a.get("type")
        if got in e.names:
            res.case(case, [])
        else:
            res.case(case, ["heapsift says %r, expected %s" % (got, e.want())])


def actual_expectation(e, by_addr):
    """The type the rest of the checks count the block as: the expected
    one, or for an expected gap the type heapsift gave (which is reported
    as a skip above)."""
    got = by_addr.get(e.addr, {}).get("type")
    if got in e.names or e.gap:
        return got
    return e.names[0]


def check_types(res, name, rec, exps, lst, by_addr, types, stripped, binary):
    rows = types.get("types", [])
    # the program's blocks: `types` leaves out the allocator's own
    used = [a for a in lst["allocations"]
            if a.get("state") == "used" and a.get("where") != "internal"]
    typed = [a for a in used if a.get("type") is not None]

    # totals agree with list
    problems = []
    tc, tb = len(typed), sum(a["size"] for a in typed)
    if types.get("typed_count") != tc or types.get("typed_bytes") != tb:
        problems.append("typed_count/typed_bytes %s/%s, list has %d typed blocks of %d bytes"
                        % (types.get("typed_count"), types.get("typed_bytes"), tc, tb))
    src = types.get("sources", {})
    if sum(src.get(k, 0) for k in ("vtable", "rtti", "dwarf")) != types.get("typed_count"):
        problems.append("sources %s do not add up to typed_count %s"
                        % (src, types.get("typed_count")))
    row_count = sum(r["count"] for r in rows)
    if row_count != types.get("used_count"):
        problems.append("rows count %d blocks, used_count is %s" % (row_count, types.get("used_count")))
    res.case("%s: types: totals agree with list" % name, problems)

    # sources: every vtable block is named by a vtable symbol, or in the
    # stripped build by RTTI (no _ZTV of the program in .dynsym of a PIE)
    n_vt = sum(1 for e in exps if e.source == "vtable")
    if stripped:
        exported = exported_vtables(binary)
        if exported is None:
            res.skip("%s: types: sources" % name, "readelf is not installed")
        else:
            problems = []
            if exported:
                problems.append("the binary exports vtables %s: fix the fixture's build"
                                % exported[:5])
            elif (src.get("vtable"), src.get("rtti")) != (0, n_vt):
                problems.append("sources %s, expected vtable 0, rtti %d (no _ZTV in .dynsym)"
                                % (src, n_vt))
            res.case("%s: types: sources: %d blocks by RTTI" % (name, n_vt), problems)
    else:
        problems = []
        if (src.get("vtable"), src.get("rtti")) != (n_vt, 0):
            problems.append("sources %s, expected vtable %d, rtti 0" % (src, n_vt))
        res.case("%s: types: sources: %d blocks by vtable" % (name, n_vt), problems)

    n_conf = sum(1 for e in exps if e.alternatives and not stripped)
    res.case("%s: types: conflicts == %d" % (name, n_conf),
             [] if types.get("conflicts") == n_conf else
             ["conflicts is %s" % types.get("conflicts")])

    # rows agree with list, one row per type
    problems = []
    names = [r["type"] for r in rows if r["type"] is not None]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        problems.append("several rows for %s" % dup)
    from_list = {}
    for a in used:
        t = base_name(a.get("type"))
        key = ("t", t) if t is not None else ("s", a["size"])
        c = from_list.setdefault(key, [0, 0])
        c[0] += 1
        c[1] += a["size"]
    row_keys = set()
    for r in rows:
        key = ("t", r["type"]) if r["type"] is not None else ("s", r.get("block_size"))
        row_keys.add(key)
        c = from_list.get(key, [0, 0])
        if [r["count"], r["bytes"]] != c:
            problems.append("row %s: count %d bytes %d, list has %d blocks of %d bytes"
                            % (key[1], r["count"], r["bytes"], c[0], c[1]))
        if r["retained"] < r["bytes"]:
            problems.append("row %s retains %d bytes, less than its own %d"
                            % (key[1], r["retained"], r["bytes"]))
    for key in sorted(set(from_list) - row_keys, key=str):
        problems.append("list has %d blocks of %s %s, types has no row"
                        % (from_list[key][0], "type" if key[0] == "t" else "size", key[1]))
    res.case("%s: types: rows agree with list" % name, problems)

    # per recorded type: count, bytes, leaked, arrays
    want = {}
    for e in exps:
        t = actual_expectation(e, by_addr)
        if t is None:
            continue
        w = want.setdefault(base_name(t), {"count": 0, "bytes": 0, "leaked_count": 0,
                                           "leaked_bytes": 0, "arrays": False, "addrs": set()})
        w["count"] += 1
        w["bytes"] += e.usable
        if leak_class(e.reach):
            w["leaked_count"] += 1
            w["leaked_bytes"] += e.usable
        w["arrays"] |= t != base_name(t)
        w["addrs"].add(e.addr)
    row_of = {r["type"]: r for r in rows if r["type"] is not None}
    for t, w in sorted(want.items()):
        case = "%s: types: row %r: %d blocks, %d bytes, %d leaked" % (
            name, t, w["count"], w["bytes"], w["leaked_count"])
        r = row_of.get(t)
        if r is None:
            res.case(case, ["no row"])
            continue
        extra = [a for a in used if base_name(a.get("type")) == t and a["address"] not in w["addrs"]]
        if extra and t in SHARED_TYPES:
            exp = dict(w)
            exp["count"] += len(extra)
            exp["bytes"] += sum(a["size"] for a in extra)
            exp["leaked_count"] += sum(1 for a in extra if leak_class(a.get("reach")))
            exp["leaked_bytes"] += sum(a["size"] for a in extra if leak_class(a.get("reach")))
            exp["arrays"] = w["arrays"] or any(a["type"] != t for a in extra)
            if VERBOSE:
                print("     (%d blocks of %s the fixture did not make)" % (len(extra), t))
        else:
            exp = w
        problems = []
        for key in ("count", "bytes", "leaked_count", "leaked_bytes", "arrays"):
            if r.get(key) != exp[key]:
                problems.append("%s is %s, expected %s" % (key, r.get(key), exp[key]))
        if extra and t not in SHARED_TYPES:
            problems.append("blocks the fixture did not make have this type: %s"
                            % ", ".join("%s (%s)" % (a["address"], a["type"]) for a in extra[:5]))
        res.case(case, problems)

    # type_size: the sizes the fixture noted ("sizeof:NAME"); the stripped
    # build has no DWARF to know them from
    if not stripped:
        for key, size in sorted(rec.get("notes", {}).items()):
            if not key.startswith("sizeof:"):
                continue
            t = key[len("sizeof:"):]
            r = row_of.get(t)
            if r is None and t not in want:
                continue  # no block of that type in this heap
            case = "%s: types: row %r has type_size %d" % (name, t, size)
            res.case(case, ["no row"] if r is None else
                     [] if r.get("type_size") == size else
                     ["type_size is %s" % r.get("type_size")])

    # retained without double counting
    groups = {}
    for e in exps:
        if e.retained:
            groups.setdefault(e.retained, []).append(e)
    for t, members in sorted(groups.items()):
        total = sum(e.usable for e in members)
        case = "%s: types: row %r retains its %d labelled blocks, %d bytes" % (
            name, t, len(members), total)
        r = row_of.get(t)
        if r is None and stripped and all(e.names == [None] for e in members):
            continue
        if r is None:
            res.case(case, ["no row"])
            continue
        res.case(case, [] if r["retained"] == total else
                 ["retained is %d, expected %d (the sum of per-block retained "
                  "sizes would be more)" % (r["retained"], total)])


def exported_vtables(binary):
    """Defined _ZTV symbols of the program's .dynsym, or None without readelf."""
    if not shutil.which("readelf"):
        return None
    r = hstest.run(["readelf", "--dyn-syms", "-W", binary], timeout=60)
    out = []
    for line in r.out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[7].startswith("_ZTV") and f[6] != "UND":
            out.append(f[7])
    return out


def check_show(res, name, exps, core):
    """Field names between holder blocks and the blocks they hold."""
    by = {e.addr: e for e in exps}
    todo = []
    for e in exps:
        if not e.has_field:
            continue
        for h in e.alloc["holders"]:
            if h["kind"] == "allocation":
                todo.append((e, h["at"], h["offset"]))
    addrs = sorted({e.addr for e, _, _ in todo} | {p for _, p, _ in todo})
    shows = {}
    with concurrent.futures.ThreadPoolExecutor(JOBS) as ex:
        for a, out in zip(addrs, ex.map(lambda a: heapsift_json(["show", core, a], "show " + a),
                                        addrs)):
            shows[a] = out
    for e, parent, off in todo:
        pe = by.get(parent)
        case = "%s: show: %s -> %s at +%d is field %r" % (
            name, parent, e.describe(), off, e.field)
        problems = []
        child, err = shows[e.addr]
        par, perr = shows[parent]
        if err or perr:
            res.case(case, [err or perr])
            continue
        if child.get("type") not in e.names and not e.gap:
            problems.append("show %s: type %r, expected %s" % (e.addr, child.get("type"), e.want()))
        if pe and par.get("type") not in pe.names and not pe.gap:
            problems.append("show %s: type %r, expected %s" % (parent, par.get("type"), pe.want()))
        pb = [p for p in child.get("pointed_by", [])
              if p.get("allocation") == parent and p.get("offset") == off]
        if not pb:
            problems.append("pointed_by has no entry for %s +%d" % (parent, off))
        elif pb[0].get("field") != e.field:
            problems.append("pointed_by field %r" % pb[0].get("field"))
        pt = [p for p in par.get("points_to", [])
              if p.get("allocation") == e.addr and p.get("offset") == off]
        if not pt:
            problems.append("points_to of %s has no entry at +%d" % (parent, off))
        else:
            if pt[0].get("field") != e.field:
                problems.append("points_to field %r" % pt[0].get("field"))
            if pt[0].get("type") not in e.names and not e.gap:
                problems.append("points_to type %r, expected %s" % (pt[0].get("type"), e.want()))
        res.case(case, problems)


def check_leaks(res, name, exps, leaks):
    group_of = {}
    for g in leaks.get("groups", []):
        for lr in g.get("leak_roots", []):
            group_of[lr["address"]] = g
    for e in exps:
        if e.reach != "leak-root":
            continue
        want = [base_name(n) for n in e.names]
        case = "%s: leaks: the group of %s has type %s" % (
            name, e.describe(), " or ".join(repr(w) for w in want))
        g = group_of.get(e.addr)
        if g is None:
            res.case(case, ["in no group's leak_roots"])
        else:
            res.case(case, [] if g.get("type") in want else
                     ["group type %r" % g.get("type")])


# ------------------------------------------------------------ driver


def copy_binaries(names):
    """Copy the fixture binaries (and gdb's) into WORKDIR/bin: the cores
    name the copies, which a rebuild of the tree does not replace while
    the test runs.  Returns {file name: path of the copy}."""
    bindir = os.path.join(WORKDIR, "bin")
    os.makedirs(bindir, exist_ok=True)
    out = {}
    for n in names:
        for f in (FIXTURES[n][0], FIXTURES[n][2]):
            src = os.path.join(FIXDIR, f) if f else None
            if f and f not in out and os.access(src, os.X_OK):
                dst = os.path.join(bindir, f)
                shutil.copy2(src, dst + ".tmp")
                os.replace(dst + ".tmp", dst)
                out[f] = dst
    return out


def take(name, copies):
    binary = copies.get(FIXTURES[name][0])
    if binary is None:
        return name, None, None, "fixture %s is not built" % os.path.join(
            FIXDIR, FIXTURES[name][0])
    try:
        snap = hstest.take_core(binary, WORKDIR, name)
    except Exception as e:  # noqa: BLE001 - reported as a failed case
        return name, None, None, "taking the core failed: %s" % e
    return name, snap.core, snap.record_path, None


def check_inferred(res, name, exps, by_addr, types):
    """Leaked blocks typed from their contents: at least INFERRED_MIN of
    the blocks the record types carry that type, as it is or as a guess
    ("T?"); no block carries another type without "?"; blocks labelled
    "none" are untyped or guessed; every inferred block says so
    (type_inferred)."""
    leaked = [e for e in exps if leak_class(e.reach)]
    right, wrong, flags = [], [], []
    typed = [e for e in leaked if e.names != [None]]
    for e in leaked:
        a = by_addr.get(e.addr, {})
        got = a.get("type")
        bare = got[:-1] if got and got.endswith("?") else got
        if got is not None and not a.get("type_inferred"):
            flags.append("%s: type %r without type_inferred" % (e.describe(), got))
        if e.names == [None]:
            if got is not None and not got.endswith("?"):
                wrong.append("%s: %r, expected untyped or a guess" % (e.describe(), got))
            continue
        if bare in e.names:
            right.append(e)
        elif got is not None and not got.endswith("?"):
            wrong.append("%s: %r, expected %s" % (e.describe(), got, e.want()))
    share = len(right) / len(typed) if typed else 1.0
    if VERBOSE:
        for e in typed:
            print("     %s: %r" % (e.describe(), by_addr.get(e.addr, {}).get("type")))
    res.case("%s: inferred: %d of %d leaked blocks carry their type (at least %d%%)"
             % (name, len(right), len(typed), int(INFERRED_MIN * 100)),
             [] if share >= INFERRED_MIN else
             ["%d of %d: %s" % (len(right), len(typed), ", ".join(
                 "%s is %r" % (e.describe(), by_addr.get(e.addr, {}).get("type"))
                 for e in typed if e not in right)[:2000])])
    res.case("%s: inferred: no wrong type without \"?\"" % name, wrong)
    res.case("%s: inferred: list says type_inferred" % name, flags[:10])
    inf = (types or {}).get("inferred", {})
    n_sure = sum(1 for e in leaked if (by_addr.get(e.addr, {}).get("type") or "?")[-1] != "?")
    res.case("%s: types: inferred counts" % name,
             [] if inf.get("typed", 0) + inf.get("guessed", 0) >= len(right) and
             inf.get("typed", 0) >= n_sure else ["inferred %s" % inf])


def check_one(res, name, core, rec_path, copies):
    binary, stripped, gdb_name = FIXTURES[name]
    binary = copies[binary]
    try:
        with open(rec_path) as f:
            rec = json.load(f)
    except (OSError, ValueError) as e:
        res.case("%s: record" % name, ["cannot read the record %s: %s" % (rec_path, e)])
        return
    exps = [Expect(a, stripped) for a in rec["allocations"]]

    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        f_list = ex.submit(heapsift_json, ["list", core, "--state", "all"], "list")
        f_types = ex.submit(heapsift_json, ["types", core], "types")
        f_leaks = ex.submit(heapsift_json, ["leaks", core], "leaks")
        (lst, e1), (types, e2), (leaks, e3) = f_list.result(), f_types.result(), f_leaks.result()
    if e1:
        res.case("%s: list" % name, [e1])
        return
    by_addr = {a["address"]: a for a in lst.get("allocations", [])}

    check_fixture(res, name, rec, exps, by_addr, copies.get(gdb_name), core)
    if name in INFERRED:
        check_inferred(res, name, exps, by_addr, None if e2 else types)
        check_same_ways(res, name, core)
        return
    check_list(res, name, exps, lst, by_addr)
    if e2:
        res.case("%s: types" % name, [e2])
    else:
        check_types(res, name, rec, exps, lst, by_addr, types, stripped, binary)
        if name == "ty_cxx":
            check_no_demangler(res, name, core, types)
    check_show(res, name, exps, core)
    check_same_ways(res, name, core)
    if e3:
        res.case("%s: leaks" % name, [e3])
    else:
        check_leaks(res, name, exps, leaks)


def links_libstdcxx():
    """Whether the heapsift binary itself needs libstdc++ to start (the
    sanitizers' runtime does), so that a broken one cannot be put first
    in its library path."""
    try:
        r = subprocess.run(["ldd", HEAPSIFT], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.SubprocessError):
        return True
    return r.returncode != 0 or "libstdc++" in r.stdout


def check_no_demangler(res, name, core, types):
    """libstdc++ is loaded only to demangle C++ names (analyzers/types.c).
    With a broken libstdc++.so.6 first in the library path, types still
    runs: one warning naming the file, no class named by a vtable, and the
    blocks and their sizes as before."""
    case = "%s: types without libstdc++" % name
    if links_libstdcxx():
        res.skip(case, "this heapsift links libstdc++ itself (sanitized build)")
        return
    if types is None or not types.get("sources", {}).get("vtable"):
        res.case(case, ["the plain run named no class by its vtable: %r"
                        % (types or {}).get("sources")])
        return
    bad = os.path.join(WORKDIR, "badlib")
    os.makedirs(bad, exist_ok=True)
    broken = os.path.join(bad, "libstdc++.so.6")
    with open(broken, "w"):
        pass  # empty: the loader says "file too short"
    env = dict(os.environ, LD_LIBRARY_PATH=bad)
    r = hstest.run([HEAPSIFT, "types", "--format", "json", core], env=env)
    problems = []
    warned = [ln for ln in r.err.splitlines() if "C++ classes left unnamed" in ln]
    if r.rc != 0:
        problems.append("exit %s: %s" % (r.rc, r.describe()))
    elif len(warned) != 1 or broken not in warned[0]:
        problems.append("wanted one warning naming %s, got %r" % (broken, r.err[:400]))
    else:
        try:
            doc = json.loads(r.out)
        except ValueError as e:
            doc = None
            problems.append("not JSON: %s" % e)
        if doc is not None:
            if doc.get("sources", {}).get("vtable") != 0:
                problems.append("classes named by vtable without a demangler: %r"
                                % doc.get("sources"))
            for k in ("used_count", "used_bytes"):
                if doc.get(k) != types.get(k):
                    problems.append("%s %r, against %r with libstdc++"
                                    % (k, doc.get(k), types.get(k)))
    res.case(case, problems)


def same_output(res, name, core, var, value, what, commands):
    """commands' output, text and JSON, warnings included, must be the
    same with the environment variable var set to value as without."""
    other = dict(os.environ, **{var: value})
    problems = []
    for args in commands:
        runs = []
        for env in (None, other):
            try:
                runs.append(hstest.run([HEAPSIFT] + args + [core], env=env))
            except OSError as e:
                problems.append("cannot run %s: %s" % (HEAPSIFT, e))
                break
        if len(runs) < 2:
            continue
        plain, changed = runs
        cmd = " ".join(args)
        if plain.rc != 0 or changed.rc != 0:
            problems.append("%s: exit %s, and %s with %s=%s: %s" %
                            (cmd, plain.rc, changed.rc, var, value, plain.describe()))
        elif plain.out != changed.out:
            problems.append("%s: output differs with %s=%s" % (cmd, var, value))
        elif plain.err != changed.err:
            problems.append("%s: warnings differ with %s=%s: %r against %r"
                            % (cmd, var, value, plain.err[:300], changed.err[:300]))
        elif not plain.out.strip():
            problems.append("%s: no output" % cmd)
    res.case("%s: %s" % (name, what), problems)


def check_same_ways(res, name, core):
    """leaks and top let the modules' debug info go before the dominators
    (hs_snapshot_release_debug): the same output as with it kept to the
    end (HEAPSIFT_TEST_KEEP_DEBUG=1).  The types' table is 16-bit while
    computing until an index does not fit: the same types when it widens
    to 32 bits as soon as an index reaches 2
    (HEAPSIFT_TEST_TYPES_NARROW_MAX=2), which also keeps the packed table
    in 16 bits where a byte a block would do (at most 255 types in use,
    as on these cores).  With two threads the types' propagation runs
    beside the graph's scan: the same output and warnings, in the same
    order, as with it after the scan (HEAPSIFT_TEST_TYPES_AFTER=1)."""
    both = (["leaks"], ["leaks", "--format", "json"], ["top"],
            ["top", "--format", "json"])
    same_output(res, name, core, "HEAPSIFT_TEST_KEEP_DEBUG", "1",
                "leaks and top the same with the debug info let go", both)
    same_output(res, name, core, "HEAPSIFT_TEST_TYPES_NARROW_MAX", "2",
                "the same types with the table widened midway",
                both + (["types", "--format", "json"],
                        ["list", "--state", "all", "--format", "json"]))
    # with two threads the types are made beside the graph's scan, their
    # warnings held until the graph's are given
    same_output(res, name, core, "HEAPSIFT_TEST_TYPES_AFTER", "1",
                "the same output and warnings with the types after the graph",
                tuple(a + ["--threads", "2"] for a in
                      both + (["types"], ["types", "--format", "json"])))


def copy_heapsift():
    """Run a copy of the CLI, which a rebuild of the tree during the test
    does not replace."""
    global HEAPSIFT
    bindir = os.path.join(WORKDIR, "bin")
    os.makedirs(bindir, exist_ok=True)
    dst = os.path.join(bindir, "heapsift")
    shutil.copy2(HEAPSIFT, dst + ".tmp")
    os.replace(dst + ".tmp", dst)
    HEAPSIFT = dst


def main():
    global VERBOSE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("fixtures", nargs="*", help="default: all (%s)" % ", ".join(FIXTURES))
    args = ap.parse_args()
    VERBOSE = args.verbose
    names = args.fixtures or list(FIXTURES)
    for n in names:
        if n not in FIXTURES:
            ap.error("unknown fixture %s" % n)
    res = hstest.Checker()
    if not os.access(HEAPSIFT, os.X_OK):
        res.case("heapsift", ["%s is not built" % HEAPSIFT])
        return res.finish()
    copy_heapsift()
    copies = copy_binaries(names)
    with concurrent.futures.ThreadPoolExecutor(len(names)) as ex:
        taken = list(ex.map(lambda n: take(n, copies), names))
    for name, core, rec, err in taken:
        if err and "not built" in err and FIXTURES[name][0] not in ("ty_c", "ty_leaks"):
            res.skip(name, err + " (no C++ compiler?)")
            continue
        if err:
            res.case("%s: core" % name, [err])
            continue
        check_one(res, name, core, rec, copies)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
