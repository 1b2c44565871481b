#!/usr/bin/env python3
"""Damaged jemalloc cores: a clear one-line error, or a warning and a partial
result; never a crash, a hang or a wrong answer given as certain.

The core is je_threads' (four threads, an explicit thread cache, several
arenas).  Where the walk found jemalloc's structures comes from `info
--format json` (extent_map, arenas_array); their layouts from the first row
of formats/jelayout.c, the table the walker itself uses.  Cases:
  - the extent map's root zeroed: exit 1, "extent map was not found";
  - the library file missing (its path renamed in the core), and renamed as
    well: exit 1, one line naming jemalloc (found by its build-id), never
    glibc's idle heap instead;
  - one slab's extent marked "merging" (a process stopped inside jemalloc):
    a warning, partial, and that slab's regions not listed;
  - one slab's free count off by one: a warning (the bitmap wins), partial,
    every block still listed as in the good core;
  - a thread cache bin claiming an impossible count: a warning, partial;
  - the thread-cache ring of arena 0 looping without returning to its head:
    a warning, partial, no hang;
  - a stripped program with its own static jemalloc of another
    configuration: exit 1, one line naming jemalloc, its version and
    build-id;
  - a leaked block's address written into a thread's jemalloc state (its
    tsd): still a leak root (the tsd is jemalloc's metadata, not a root);
  - the same address in the dynamic linker's stale cache_new (its cache
    unloaded): still a leak root;
  - the core truncated at several lengths: exit 1 with one line or exit 0
    with a warning.
Prints "N passed, M failed" last.
"""

import json
import os
import re
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402
import corrupt_core as cc  # noqa: E402
import test_bad_input as tb  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "jemalloc_bad")
R = hstest.Checker()


def layout():
    """The first row of formats/jelayout.c: {field: value}."""
    src = open(os.path.join(hstest.SRCDIR, "formats", "jelayout.c")).read()
    row = src[src.index("{", src.index("hs_je_layouts[]")) + 1:]
    row = row[row.index("{") + 1:row.index("}")]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"\.(\w+) = (\d+),", row)}


L = layout()


def run(*args):
    return hstest.run([HS] + [str(a) for a in args], timeout=tb.TIMEOUT)


def copy(src, name):
    dst = os.path.join(WORK, name)
    shutil.copyfile(src, dst)
    return dst


def listing(core, probs):
    r = run("list", core, "--state", "all", "--format", "json")
    probs += tb.basic_problems(r)
    if r.rc != 0:
        probs.append("list: exit %d: %s" % (r.rc, r.err.strip()[:300]))
        return None, r
    return tb.parse_json(r, probs), r


def leaf_entries(c, emap):
    """(key, edata) of the extent map's non-empty leaf words, from the core."""
    nhib = 64 - L["lg_vaddr"]
    root = emap + L["emap_rtree_off"] + L["rtree_root_off"]
    b0, b1 = L["rtree_bits0"], L["rtree_bits1"]
    assert L["rtree_height"] == 2, "this test reads two-level extent maps"
    raw = c.read(root, 8 << b0)
    for i in range(1 << b0):
        child = struct.unpack_from("<Q", raw, 8 * i)[0]
        if not child:
            continue
        leaf = c.read(child, 8 << b1)
        for k in range(1 << b1):
            bits = struct.unpack_from("<Q", leaf, 8 * k)[0]
            e = ((bits << nhib) & (2**64 - 1))
            e = (e - 2**64 if e >> 63 else e) >> nhib
            e &= ~(L["edata_size"] - 1) & (2**64 - 1)
            if e:
                yield (i << (64 - nhib - b0)) | (k << L["lg_page"]), e


def field(bits, name):
    return bits >> L["bits_%s_shift" % name] & ((1 << L["bits_%s_width" % name]) - 1)


def active_slab(c, emap):
    """An active slab's edata_t: (edata, its e_bits)."""
    for _, e in leaf_entries(c, emap):
        bits = c.u64(e)
        if bits >> L["bits_slab_shift"] & 1 and field(bits, "state") == 0:
            return e, bits
    raise cc.CoreError("no active slab in the extent map")


def expect_warned(name, core, patterns, check=None):
    probs = []
    doc, r = listing(core, probs)
    if doc is not None:
        if not doc.get("partial"):
            probs.append("list is not marked partial")
        warn = [ln for ln in r.err.splitlines() if ln.startswith("heapsift: warning:")]
        if not any(all(re.search(p, w, re.I) for p in patterns) for w in warn):
            probs.append("no warning matches %s: %r" % (patterns, warn[:4]))
        if check:
            probs += check(doc)
    R.case(name, probs)


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    exe = os.path.join(hstest.FIXTURES, "je_threads")
    snap = hstest.take_core(exe, WORK, "je_threads")
    good = snap.core
    r = run("info", good, "--format", "json")
    a = json.loads(r.out)["allocator"] if r.rc == 0 else {}
    if a.get("name") != "jemalloc" or "extent_map" not in a:
        R.case("info on the good core names jemalloc and its extent map",
               ["exit %d: %s %s" % (r.rc, r.err.strip()[:300], a)])
        return R.finish()
    emap = int(a["extent_map"], 16)
    arenas = int(a["arenas_array"], 16)
    probs = []
    gdoc, _ = listing(good, probs)
    if gdoc is not None and gdoc.get("partial"):
        probs.append("the good core's list is partial")
    R.case("control: the good core lists completely", probs)
    if gdoc is None:
        return R.finish()
    good_blocks = {(x["address"], x["size"], x["state"]) for x in gdoc["allocations"]}

    # the extent map's root zeroed
    bad = copy(good, "no_emap.core")
    with cc.Core(bad, writable=True) as c:
        root = emap + L["emap_rtree_off"] + L["rtree_root_off"]
        c.write(root, bytes(8 << L["rtree_bits0"]))
    for cmd in ("list", "leaks", "info"):
        if cmd == "info":
            r = run("info", bad, "--format", "json")
            probs = tb.basic_problems(r)
            d = tb.parse_json(r, probs) if r.rc == 0 else None
            err = (d or {}).get("allocator", {}).get("error", "")
            if r.rc != 0 or "extent map was not found" not in err:
                probs.append("exit %d, allocator error %r" % (r.rc, err))
            R.case("extent map zeroed: info works and says why the heap is unread", probs)
        else:
            R.case("extent map zeroed: %s exits 1 with one line" % cmd,
                   tb.expect_error(run(cmd, bad), 1, [r"jemalloc", r"extent map was not found"]))

    # the library file missing (its path renamed wherever the core has it:
    # the file note, the dynamic linker's link map): no version string, no
    # code to look into
    bad = copy(good, "no_lib.core")
    with open(bad, "r+b") as f:
        data = f.read()
        n = data.count(b"-gnu/libjemalloc")
        f.seek(0)
        f.write(data.replace(b"-gnu/libjemalloc", b"-gnX/libjemalloc"))
    if not n:
        R.case("library file missing: the core's file note names libjemalloc", ["not found"])
    else:
        R.case("library file missing: list exits 1 with one line naming jemalloc",
               tb.expect_error(run("list", bad), 1, [r"jemalloc"]))

    # the library renamed as well: still jemalloc (by its build-id in the
    # layout table), never glibc's idle heap instead
    bad = copy(good, "renamed_lib.core")
    with open(bad, "r+b") as f:
        data = f.read()
        f.seek(0)
        f.write(data.replace(b"libjemalloc.so.2", b"libxemalloc.so.2"))
    R.case("library renamed and missing: list exits 1 naming jemalloc, not glibc's heap",
           tb.expect_error(run("list", bad), 1, [r"jemalloc", r"build-id"]))

    # a slab in transition
    bad = copy(good, "merging.core")
    with cc.Core(bad, writable=True) as c:
        e, bits = active_slab(c, emap)
        base = c.u64(e + L["edata_addr_off"]) & ~((1 << L["lg_page"]) - 1)
        size = c.u64(e + L["edata_size_off"]) & ~((1 << L["lg_page"]) - 1)
        sh = L["bits_state_shift"]
        c.put_u64(e, (bits & ~(7 << sh)) | (5 << sh))

    def none_inside(doc, lo=base, hi=base + size):
        inside = [x for x in doc["allocations"] if lo <= int(x["address"], 16) < hi]
        return ["%d blocks listed inside the skipped slab" % len(inside)] if inside else []
    expect_warned("a slab marked merging: warning, partial, its regions not listed", bad,
                  [r"jemalloc", r"extents? .*skipped"], none_inside)

    # a slab's free count off by one: the bitmap decides
    bad = copy(good, "nfree.core")
    with cc.Core(bad, writable=True) as c:
        e, bits = active_slab(c, emap)
        sh, w = L["bits_nfree_shift"], L["bits_nfree_width"]
        nfree = field(bits, "nfree")
        c.put_u64(e, (bits & ~(((1 << w) - 1) << sh)) | (((nfree + 1) % (1 << w)) << sh))

    def same_blocks(doc):
        got = {(x["address"], x["size"], x["state"]) for x in doc["allocations"]}
        return [] if got == good_blocks else ["%d blocks differ from the good core's"
                                              % len(got ^ good_blocks)]
    expect_warned("a slab's free count off by one: warning, partial, the same blocks", bad,
                  [r"free counts disagree"], same_blocks)

    # a thread cache bin with an impossible count; then a looping ring
    with cc.Core(good) as c:
        arena0 = c.u64(arenas)
        head = c.u64(arena0 + L["arena_descriptor_ql_off"])
        second = c.u64(head + L["descriptor_next_off"])
        bins = c.u64(head + L["descriptor_bins_off"])
    bad = copy(good, "tcache_bin.core")
    with cc.Core(bad, writable=True) as c:
        c.write(bins + L["cache_bin_low_bits_empty_off"],
                struct.pack("<H", (c.u64(bins + L["cache_bin_stack_head_off"]) + 8 * 9000 + 3) & 0xffff))
    expect_warned("a thread cache bin claiming an impossible count: warning, partial", bad,
                  [r"thread cache", r"cached pointers"])
    if second == head:
        R.case("arena 0 has two thread caches (needed for the ring case)",
               ["its ring has one entry"])
    else:
        bad = copy(good, "ring_loop.core")
        with cc.Core(bad, writable=True) as c:
            c.put_u64(second + L["descriptor_next_off"], second)
        expect_warned("arena 0's thread cache ring looping: warning, partial, no hang", bad,
                      [r"ring is broken"])

    # a static jemalloc of another configuration, stripped: no DWARF, no
    # symbols; the table's row for its version does not fit: refused in
    # one line naming jemalloc, its version and build-id (glibc's idle heap
    # is not walked instead)
    stripped = os.path.join(hstest.FIXTURES, "je_threads_gs")
    if not os.path.exists(stripped):
        R.case("stripped static jemalloc: fixture built", ["%s missing (scripts/setup.sh builds "
                                                            "the -g jemalloc it needs)" % stripped])
    else:
        score = hstest.take_core(stripped, WORK, "je_threads_gs").core
        R.case("stripped static jemalloc of another configuration: list exits 1, one line",
               tb.expect_error(run("list", score), 1,
                               [r"jemalloc 5\.", r"build-id [0-9a-f]{40}", r"do not fit"]))

    # a leaked block's address in a thread's jemalloc state (the tsd's
    # rtree cache keeps page keys; one 1 GiB-aligned key once equalled a
    # leaked block's address): the state is jemalloc's metadata, no root
    with open(snap.record_path) as f:
        rec = json.load(f)
    leak = next(a for a in rec["allocations"] if a["expect"] == "leak-root")
    with cc.Core(good) as c:
        tsd = None
        d = head
        for _ in range(64):
            b = c.u64(d + L["descriptor_bins_off"])
            tcache = b - L["tcache_bins_off"]
            cand = tcache - L["tsd_tcache_off"]
            slow = c.u64(tcache + L["tcache_slow_ptr_off"])
            if cand <= slow < cand + L["tsd_size"]:  # a thread's own tcache
                tsd = cand
                break
            d = c.u64(d + L["descriptor_next_off"])
            if d == head:
                break
    if tsd is None:
        R.case("a thread's tsd found through arena 0's tcache ring", ["none"])
    else:
        bad = copy(good, "tsd_key.core")
        with cc.Core(bad, writable=True) as c:
            c.put_u64(tsd + L["tsd_size"] - 8, int(leak["address"], 16))
        r = run("list", bad, "--format", "json")
        probs = tb.basic_problems(r)
        d = tb.parse_json(r, probs) if r.rc == 0 else None
        got = next((x.get("reach") for x in (d or {}).get("allocations", [])
                    if x["address"] == leak["address"]), None)
        if got != "leak-root":
            probs.append("%s is %s" % (leak["address"], got))
        R.case("a leaked block's address in a thread's jemalloc state: still a leak root", probs)

    # a leaked block's address in the dynamic linker's stale cache_new
    # (ld.so unmaps /etc/ld.so.cache and sets cache to NULL, but keeps
    # cache_new; a heap mapping can start there later): no root
    info = json.loads(run("info", good, "--format", "json").out)
    ld = next((m for m in info["modules"] if "ld-linux" in m["name"]), None)
    dbg = ld and ld.get("debug", {}).get("path")
    syms = {}
    if dbg:
        r = hstest.run(["nm", dbg], timeout=60)
        for ln in r.out.splitlines():
            f = ln.split()
            if len(f) == 3 and f[2] in ("cache", "cache_new"):
                syms[f[2]] = int(f[0], 16) + int(ld["bias"], 16)
    if len(syms) != 2:
        R.case("ld.so's cache and cache_new symbols (libc6-dbg)", ["not found: %s" % dbg])
    else:
        bad = copy(good, "ld_cache_new.core")
        with cc.Core(bad, writable=True) as c:
            unloaded = c.u64(syms["cache"]) == 0
            c.put_u64(syms["cache_new"], int(leak["address"], 16))
        if not unloaded:
            R.case("ld.so unloaded its cache in the fixture", ["cache is not NULL"])
        else:
            r = run("list", bad, "--format", "json")
            probs = tb.basic_problems(r)
            d = tb.parse_json(r, probs) if r.rc == 0 else None
            got = next((x.get("reach") for x in (d or {}).get("allocations", [])
                        if x["address"] == leak["address"]), None)
            if got != "leak-root":
                probs.append("%s is %s" % (leak["address"], got))
            R.case("a leaked block's address in ld.so's stale cache_new: still a leak root",
                   probs)

    # truncated cores
    size = os.path.getsize(good)
    for frac in (0.3, 0.6, 0.9, 0.99):
        n = int(size * frac)
        bad = os.path.join(WORK, "trunc.core")
        with open(good, "rb") as f, open(bad, "wb") as g:
            g.write(f.read(n))
        for cmd in ("list", "leaks"):
            probs, _ = tb.expect_error_or_warned(run(cmd, bad, "--format", "json"), [r"."])
            R.case("truncated at %d%%: %s errs in one line or warns" % (frac * 100, cmd), probs)
    status = R.finish()
    if status == 0:
        shutil.rmtree(WORK, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
