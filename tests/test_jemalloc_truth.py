#!/usr/bin/env python3
"""Ground-truth tests of heapsift's jemalloc 5.3 walker.

For every fixture (tests/fixtures/je_*.c, recorder tests/fixtures/
je_record.h): run it once in verification mode (JE_VERIFY=1: each thread
pops its "tcache" claims back and must get the freed addresses in reverse
order, proof that they sat in that cache), then run it until it stops,
take a core with gcore, and compare heapsift with the record:
  - `list --state all`: allocator jemalloc, not partial; every recorded
    live allocation listed used, size == malloc_usable_size, where small
    or large as its size says, arena == mallctl arenas.lookup; every freed
    address not used (unless a later recorded allocation got it back),
    the "tcache" claims listed free/tcache with their usable size, the
    "slab" claims free/slab, the "pages" claims inside a free dirty, muzzy
    or retained run; no two listed blocks overlap; known keys and places;
    sum(used sizes) + sum(tcache-held sizes) == mallctl stats.allocated;
  - `info`: name jemalloc, the library's version string, not partial,
    stats allocated/active/retained equal to mallctl's, dirty and muzzy
    equal to pdirty/pmuzzy pages times the page size;
  - `leaks` and list's "reach": the class of every recorded allocation,
    every leak root holding exactly the blocks charged to it;
  - `frag`: dirty, muzzy and retained bytes and system bytes against
    mallctl's; every arena's small size classes (slabs, regions, regions
    handed out, free regions) against stats.arenas.<i>.bins.<j>.
Blocks heapsift lists that the fixture did not make (jemalloc's own, such
as thread-cache stacks, and libc's mallocs) are allowed and reported
("NOTE" lines), and so are tcache-held blocks the fixture never freed (a
cache bin is filled from slabs in batches).  Checks named "FIXTURE:
fixture: ..." test the fixture itself.

Usage: test_jemalloc_truth.py [-v] [FIXTURE ...]
Exit status 0 when every check passed; the last line is "N passed, M failed".
Environment: see hstest.py (HEAPSIFT, FIXTURES, WORKDIR); HS_KEEP_CORES=1
keeps the cores of fixtures whose checks all passed.
"""

import argparse
import bisect
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hstest  # noqa: E402
from hstest import hx  # noqa: E402

FIXTURES = ["je_threads", "je_arenas", "je_frag"]
USED_WHERE = {"small", "large", "internal"}  # internal: jemalloc's own (tcache stacks)
FREE_WHERE = {"slab", "tcache", "dirty", "muzzy", "retained"}
PAGE_WHERE = {"dirty", "muzzy", "retained"}
CLASSES = ("reachable", "possible", "leak-root", "indirect")
WANT_DWARF = False  # --dwarf
CONF = ""  # --conf

WORK = os.path.join(hstest.WORKDIR, "jemalloc_truth")

# The fixtures' heap must be the one their code makes.
for _var in ("MALLOC_CONF", "LD_PRELOAD", "JE_VERIFY"):
    os.environ.pop(_var, None)


def desc(a):
    return "%s [%s %d B, thread %d]" % (a["address"], a["label"],
                                        a["request"], a["thread"])


def fdesc(f):
    return "freed %s [%s %d B, thread %d, claim %s%s]" % (
        f["address"], f["label"], f["request"], f["thread"], f["where"],
        " " + f["tcache"] if "tcache" in f else "")


def entry_str(e):
    if e is None:
        return "not listed"
    return "listed %s/%s size %s arena %s reach %s" % (
        e.get("state"), e.get("where"), e.get("size"), e.get("arena"),
        e.get("reach"))


def hs(command, core, binary, *extra):
    """(parsed JSON, None) or (None, error text)."""
    args = [hstest.HEAPSIFT, command, core, "--exe", binary, "--format", "json"]
    args += list(extra)
    r = hstest.run(args, timeout=hstest.HEAPSIFT_TIMEOUT)
    if r.rc != 0:
        return None, r.describe()
    try:
        return json.loads(r.out), None
    except ValueError as e:
        return None, "invalid JSON (%s): %r" % (e, r.out[:300])


def verify_run(ck, name, binary):
    rec_path = os.path.join(WORK, name + ".verify.json")
    if os.path.exists(rec_path):
        os.unlink(rec_path)
    env = dict(os.environ, HS_RECORD=rec_path, JE_VERIFY="1")
    r = hstest.run([binary], timeout=120, env=env)
    problems = []
    if r.rc != 0:
        problems.append(r.describe())
    try:
        with open(rec_path) as f:
            v = json.load(f)
        problems += v.get("selfcheck", [])
        if not v.get("verify"):
            problems.append("not a verification record")
    except (OSError, ValueError) as e:
        problems.append("no verification record: %s" % e)
    problems += [ln for ln in r.err.splitlines() if ln.endswith("!")]
    ck.case("%s: fixture: tcache claims pop back in LIFO order "
              "(verification run)" % name, problems)


def check_record(ck, name, rec):
    ck.case("%s: fixture: selfchecks" % name, list(rec.get("selfcheck", [])))
    ck.check("%s: fixture: writing the record neither allocated nor freed "
             "(stats read before and after it)" % name,
             rec.get("stats") == rec.get("stats_after_record"),
             "before %s, after %s" % (rec.get("stats"),
                                      rec.get("stats_after_record")))
    addrs = [hx(a["address"]) for a in rec["allocations"]]
    ck.check("%s: fixture: live addresses are distinct" % name,
             len(set(addrs)) == len(addrs))
    bad = [desc(a) for a in rec["allocations"] if a["arena"] >= 4096]
    ck.case("%s: fixture: arenas.lookup knows every live allocation" % name, bad)


def counts(rec):
    c = {"live": len(rec["allocations"]), "freed": len(rec["freed"])}
    for a in rec["allocations"]:
        k = "huge" if a["usable"] >= rec["huge_min"] else a["kind"]
        c[k] = c.get(k, 0) + 1
        c[a["expect"]] = c.get(a["expect"], 0) + 1
    for f in rec["freed"]:
        c["freed-" + f["where"]] = c.get("freed-" + f["where"], 0) + 1
    return c


def check_list(ck, name, rec, lst):
    ck.check("%s: list says allocator jemalloc" % name,
             lst.get("allocator") == "jemalloc", "allocator %r" % lst.get("allocator"))
    ck.check("%s: list is not partial" % name, lst.get("partial") is False,
             "partial %s, warnings %s" % (lst.get("partial"), lst.get("warnings")))
    entries = lst.get("allocations", [])
    by = {}
    dup = []
    for e in entries:
        addr = hx(e["address"])
        if addr in by:
            dup.append("%s listed twice" % e["address"])
        by[addr] = e
    ck.case("%s: every address is listed once" % name, dup)

    bad = []
    for e in entries:
        st, w = e.get("state"), e.get("where")
        if st == "used" and w not in USED_WHERE or st == "free" and w not in FREE_WHERE \
                or st not in ("used", "free"):
            bad.append("%s: state %s where %s" % (e["address"], st, w))
        if "chunk" in e or "chunk_size" in e:
            bad.append("%s: has glibc's chunk keys" % e["address"])
        if not isinstance(e.get("size"), int) or e["size"] <= 0:
            bad.append("%s: size %r" % (e["address"], e.get("size")))
    ck.case("%s: every entry has a jemalloc state/place and no chunk keys" % name, bad)

    # no two listed blocks overlap
    spans = sorted((hx(e["address"]), e.get("size") or 0, e) for e in entries)
    bad = []
    for (a0, s0, e0), (a1, _s1, e1) in zip(spans, spans[1:]):
        if a0 + s0 > a1:
            bad.append("%s (%s/%s, %d B) overlaps %s (%s/%s)" % (
                e0["address"], e0.get("state"), e0.get("where"), s0,
                e1["address"], e1.get("state"), e1.get("where")))
    ck.case("%s: no two listed blocks overlap" % name, bad)

    # recorded live allocations
    for a in rec["allocations"]:
        e = by.get(hx(a["address"]))
        ok = (e is not None and e.get("state") == "used"
              and e.get("size") == a["usable"] and e.get("where") == a["kind"]
              and e.get("arena") == a["arena"])
        ck.check("%s: %s listed used/%s, size %d, arena %d"
                 % (name, desc(a), a["kind"], a["usable"], a["arena"]), ok,
                 entry_str(e))

    # freed ones
    used_starts = sorted(hx(e["address"]) for e in entries if e.get("state") == "used")
    used_by = {hx(e["address"]): e for e in entries if e.get("state") == "used"}
    pages = sorted((hx(e["address"]), e["size"], e) for e in entries
                   if e.get("state") == "free" and e.get("where") in PAGE_WHERE)
    page_starts = [p[0] for p in pages]

    def used_containing(addr):
        i = bisect.bisect_right(used_starts, addr) - 1
        if i >= 0:
            e = used_by[used_starts[i]]
            if used_starts[i] <= addr < used_starts[i] + e["size"]:
                return e
        return None

    def page_run_containing(addr):
        i = bisect.bisect_right(page_starts, addr) - 1
        if i >= 0 and pages[i][0] <= addr < pages[i][0] + pages[i][1]:
            return pages[i][2]
        return None

    for f in rec["freed"]:
        if f["reused"]:
            continue
        addr = hx(f["address"])
        e = by.get(addr)
        inside = used_containing(addr)
        ck.check("%s: %s is not in use" % (name, fdesc(f)), inside is None,
                 "inside used block %s" % entry_str(inside) if inside else "")
        if CONF:
            continue  # where a freed block went rests on jemalloc's defaults
        if f["where"] == "tcache":
            ok = e is not None and e.get("state") == "free" and \
                e.get("where") == "tcache" and e.get("size") == f["usable"]
            ck.check("%s: %s listed free/tcache, size %d" % (name, fdesc(f), f["usable"]),
                     ok, entry_str(e))
        elif f["where"] == "slab":
            ok = e is not None and e.get("state") == "free" and \
                e.get("where") == "slab" and e.get("size") == f["usable"]
            ck.check("%s: %s listed free/slab, size %d" % (name, fdesc(f), f["usable"]),
                     ok, entry_str(e))
        elif f["where"] == "pages":
            run = page_run_containing(addr)
            ck.check("%s: %s inside a free dirty/muzzy/retained run" % (name, fdesc(f)),
                     run is not None, "listed at the address: %s" % entry_str(e))

    # what the fixture did not make
    recorded = {hx(a["address"]) for a in rec["allocations"]}
    freed = {hx(f["address"]) for f in rec["freed"]}
    others = [e for e in entries if e.get("state") == "used"
              and hx(e["address"]) not in recorded]
    print("NOTE %s: %d used blocks the fixture did not make (jemalloc's and "
          "libc's own), %d bytes" % (name, len(others),
                                    sum(e["size"] for e in others)))
    tc = [e for e in entries if e.get("state") == "free" and e.get("where") == "tcache"]
    tc_other = [e for e in tc if hx(e["address"]) not in freed]
    print("NOTE %s: %d tcache-held blocks (%d bytes), %d of them never freed by "
          "the fixture (filled from slabs), %d bytes"
          % (name, len(tc), sum(e["size"] for e in tc), len(tc_other),
             sum(e["size"] for e in tc_other)))
    bad = [entry_str(e) + " at " + e["address"] for e in tc if hx(e["address"]) in recorded]
    ck.case("%s: no tcache-held block is a recorded live allocation" % name, bad)

    # jemalloc's definition of allocated
    used_bytes = sum(e["size"] for e in entries if e.get("state") == "used")
    tc_bytes = sum(e["size"] for e in tc)
    want = rec["stats"]["allocated"]
    ck.check("%s: used bytes + tcache-held bytes == stats.allocated (%d)"
             % (name, want), used_bytes + tc_bytes == want,
             "used %d + tcache %d = %d, differs by %d"
             % (used_bytes, tc_bytes, used_bytes + tc_bytes,
                used_bytes + tc_bytes - want))

    # leak classes through list's reach
    for a in rec["allocations"]:
        e = by.get(hx(a["address"]))
        got = e.get("reach") if e and e.get("state") == "used" else entry_str(e)
        ck.check("%s: %s class %s" % (name, desc(a), a["expect"]),
                 got == a["expect"], "got %s" % got)
    return by


def check_info(ck, name, rec, info):
    al = info.get("allocator", {})
    ck.check("%s: info allocator name jemalloc" % name, al.get("name") == "jemalloc",
             "allocator %s" % json.dumps(al)[:500])
    ck.check("%s: info version %s" % (name, rec["jemalloc"]),
             al.get("version") == rec["jemalloc"], "version %r" % al.get("version"))
    ck.check("%s: info not partial" % name, al.get("partial") is False,
             "partial %r" % al.get("partial"))
    if WANT_DWARF:
        ck.check("%s: layouts from the library's own DWARF" % name,
                 al.get("layouts") == "the library's own DWARF",
                 "layouts %r" % al.get("layouts"))
    st = al.get("stats") or {}
    s = rec["stats"]
    page = rec["page"]
    want = {"allocated": s["allocated"], "active": s["active"],
            "dirty": s["pdirty"] * page, "muzzy": s["pmuzzy"] * page,
            "retained": s["retained"]}
    for k, v in want.items():
        ck.check("%s: info stats.%s == %d" % (name, k, v), st.get(k) == v,
                 "info says %r" % st.get(k))


def check_leaks(ck, name, rec, lk, by):
    ck.check("%s: leaks is not partial" % name, lk.get("partial") is False,
             "partial %s, warnings %s" % (lk.get("partial"), lk.get("warnings")))
    roots = {}
    for g in lk.get("groups", []):
        for lr in g.get("leak_roots", []):
            roots[hx(lr["address"])] = lr
    for a in rec["allocations"]:
        addr = hx(a["address"])
        if a["expect"] != "leak-root":
            if addr in roots:
                ck.check("%s: %s is not a leak root" % (name, desc(a)), False,
                         "expected %s" % a["expect"])
            continue
        held = [x for x in rec["allocations"]
                if x["expect"] == "indirect" and hx(x.get("owner", "0x0")) == addr]
        want = (len(held), sum(x["usable"] for x in held))
        lr = roots.get(addr)
        got = (lr["held_count"], lr["held_bytes"]) if lr else None
        ck.check("%s: %s leak root holds %d blocks, %d bytes"
                 % (name, desc(a), want[0], want[1]), got == want,
                 "got %s" % ("not a leak root" if got is None else
                             "%d blocks, %d bytes" % got))
    # the summary agrees with list
    tot = {c: [0, 0] for c in CLASSES}
    for e in by.values():
        if e.get("state") == "used" and e.get("reach") in tot:
            tot[e["reach"]][0] += 1
            tot[e["reach"]][1] += e["size"]
    summ = lk.get("summary", {})
    bad = []
    for c in CLASSES:
        x = summ.get(c.replace("-", "_"), {})
        if [x.get("count"), x.get("bytes")] != tot[c]:
            bad.append("%s: summary %s/%s, list %s/%s" % (
                c, x.get("count"), x.get("bytes"), tot[c][0], tot[c][1]))
    ck.case("%s: leaks summary agrees with list" % name, bad)
    recorded = {hx(a["address"]) for a in rec["allocations"]}
    others = [e for a_, e in sorted(by.items()) if a_ not in recorded
              and e.get("reach") in ("leak-root", "indirect")]
    print("NOTE %s: %d leaked blocks the fixture did not make, %d bytes%s"
          % (name, len(others), sum(e["size"] for e in others),
             "".join("\n     %s %s" % (e["address"], entry_str(e)) for e in others[:8])))


def check_frag(ck, name, rec, fr, lst):
    """frag against jemalloc's own counts: the page runs against mallctl's
    pdirty/pmuzzy/retained and active; each arena's small size classes
    against stats.arenas.<i>.bins.<j>.curslabs and curregs (regions handed
    out, thread caches' included) and arenas.bin.<j>.nregs."""
    s, page = rec["stats"], rec["page"]
    heap = fr.get("heap", {})
    free = heap.get("free", {})
    for kind, want in (("dirty", s["pdirty"] * page), ("muzzy", s["pmuzzy"] * page),
                       ("retained", s["retained"])):
        got = free.get(kind, {}).get("bytes")
        ck.check("%s: frag free %s bytes == jemalloc's %d" % (name, kind, want),
                 got == want, "got %r" % got)
    want = s["active"] + (s["pdirty"] + s["pmuzzy"]) * page
    ck.check("%s: frag system == active + dirty + muzzy pages (%d)" % (name, want),
             heap.get("system") == want, "got %r" % heap.get("system"))
    used = sum(a["size"] for a in lst["allocations"] if a["where"] in ("small", "large"))
    ck.check("%s: frag used bytes == list's small and large blocks (%d)" % (name, used),
             heap.get("used_bytes") == used, "got %r" % heap.get("used_bytes"))
    want = {(b["arena"], b["size"]): b for b in rec["bins"]}
    got = {}
    for a in fr.get("arenas", []):
        for c in a.get("classes", []):
            got[(a["index"], c["size"])] = c
    ck.check("%s: frag's (arena, size class) pairs with slabs == jemalloc's (%d)"
             % (name, len(want)), set(got) == set(want),
             "missing %s, extra %s" % (sorted(set(want) - set(got))[:6],
                                       sorted(set(got) - set(want))[:6]))
    bad = []
    for key in sorted(set(got) & set(want)):
        g, w = got[key], want[key]
        exp = {"slabs": w["curslabs"], "regions": w["curslabs"] * w["nregs"],
               "handed_out": w["curregs"], "free": w["curslabs"] * w["nregs"] - w["curregs"]}
        have = {"slabs": g["slabs"], "regions": g["regions"],
                "handed_out": g["used"] + g["tcache"], "free": g["free"]}
        if exp != have:
            bad.append("arena %d size %d: jemalloc %s, heapsift %s" % (key[0], key[1], exp, have))
    ck.check("%s: frag's slabs, regions, handed-out and free regions per arena and class "
             "== jemalloc's" % name, not bad, "; ".join(bad[:4]))


def run_fixture(ck, name, keep):
    binary = os.path.join(hstest.FIXTURES, name)
    if not os.access(binary, os.X_OK):
        ck.check("%s: fixture built" % name, False, "%s not found" % binary)
        return
    if not CONF:
        verify_run(ck, name, binary)
    try:
        snap = hstest.take_core(binary, WORK, name)
        core = snap.core
        with open(snap.record_path) as f:
            rec = json.load(f)
    except (hstest.HsError, OSError, ValueError) as e:
        ck.check("%s: core taken" % name, False, str(e))
        return
    failed = ck.failed
    check_record(ck, name, rec)
    c = counts(rec)
    print("NOTE %s: recorded %s" % (name, ", ".join(
        "%s %d" % kv for kv in sorted(c.items()))))
    lst, err = hs("list", core, binary, "--state", "all")
    if lst is None:
        ck.check("%s: heapsift list --state all" % name, False, err)
        info, err2 = hs("info", core, binary)
        if info is not None:
            al = info.get("allocator", {})
            ck.check("%s: info allocator name jemalloc" % name,
                     al.get("name") == "jemalloc", "allocator %s" % json.dumps(al)[:300])
        else:
            ck.check("%s: heapsift info" % name, False, err2)
        return
    by = check_list(ck, name, rec, lst)
    info, err = hs("info", core, binary)
    if info is None:
        ck.check("%s: heapsift info" % name, False, err)
    else:
        check_info(ck, name, rec, info)
    lk, err = hs("leaks", core, binary)
    if lk is None:
        ck.check("%s: heapsift leaks" % name, False, err)
    else:
        check_leaks(ck, name, rec, lk, by)
    fr, err = hs("frag", core, binary)
    if fr is None:
        ck.check("%s: heapsift frag" % name, False, err)
    else:
        check_frag(ck, name, rec, fr, lst)
    if ck.failed == failed and not keep and os.path.exists(core):
        os.unlink(core)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--dwarf", action="store_true",
                    help="the fixtures link a jemalloc with debug info: its layouts "
                         "must come from DWARF, not from heapsift's table")
    ap.add_argument("--conf", default="",
                    help="MALLOC_CONF for the fixtures (jemalloc's options); the "
                         "checks that rest on its defaults (which freed blocks sit "
                         "in a thread cache or a slab) are left out")
    ap.add_argument("fixtures", nargs="*", default=FIXTURES)
    args = ap.parse_args()
    global WANT_DWARF, CONF
    WANT_DWARF = args.dwarf
    CONF = args.conf
    if CONF:
        os.environ["MALLOC_CONF"] = CONF
        # a directory of its own: ctest may run the variants side by side
        global WORK
        WORK = "%s_%s" % (WORK, re.sub(r"[^a-z0-9]+", "_", CONF))
    ck = hstest.Checker(quiet=not args.verbose)
    os.makedirs(WORK, exist_ok=True)
    if not os.access(hstest.HEAPSIFT, os.X_OK):
        ck.check("heapsift binary", False, "%s not found" % hstest.HEAPSIFT)
        return ck.finish()
    try:
        subprocess.run(["gcore", "--version"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    except FileNotFoundError:
        ck.check("gcore installed", False, "gcore (gdb) not found")
        return ck.finish()
    keep = os.environ.get("HS_KEEP_CORES") == "1"
    for name in args.fixtures:
        run_fixture(ck, name, keep)
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())
