#!/usr/bin/env python3
"""Ground-truth tests of heapsift's glibc heap walker.

For every fixture (tests/fixtures/fx_*.c): run it until it stops, take a
core with gcore and a kernel core of the same stopped process (checks on
the latter are named "FIXTURE[kernel]: ..."), and compare three views of
the heap:
  - the record the fixture wrote (truth.h): every allocation it made, freed
    or live, with malloc_usable_size and the header read from memory, and
    mallinfo2() taken inside the process just before the stop;
  - gdb with libc6-dbg reading the allocator state from the core
    (gdb_oracle.py): an independent walker used to validate the fixtures'
    claims and to say who is right when heapsift disagrees;
  - heapsift list/info.

Checks named "FIXTURE: fixture ..." test the fixture and the oracle (a
failure there is a test bug or a glibc surprise, not a heapsift bug); all
other checks test heapsift.

Usage: test_glibc_truth.py [-v] [--no-oracle] [--cores gcore,kernel] [FIXTURE ...]
Exit status 0 when every check passed; the last line is "N passed, M failed".
Cores of fixtures whose checks all passed are deleted (HS_KEEP_CORES=1 keeps
them); see hstest.py for the environment.
"""

import argparse
import bisect
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402
from hstest import HsError, hx  # noqa: E402

FIXTURES = [
    "fx_sizes",
    "fx_tcache",
    "fx_fastbin",
    "fx_bins",
    "fx_mmap",
    "fx_realloc",
    "fx_threads",
    "fx_shared_arena",
    "fx_bigheap",
    "fx_tuned",
    "fx_noncontig",
    "fx_trim",
    "fx_nomalloc",
]

# Fixtures on which the CLI filters (--state, --min-size) are also checked.
FILTER_FIXTURES = {"fx_sizes", "fx_bins", "fx_threads"}

MALLINFO_FIELDS = ["arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                   "fsmblks", "uordblks", "fordblks", "keepcost"]
USED_WHERE = {"heap", "mmapped", "internal"}
FREE_WHERE = {"bin", "fastbin", "tcache", "top"}


def describe(rec):
    s = "%s %s(%d)" % (rec["address"], rec["kind"], rec["request"])
    if rec.get("align"):
        s += " align %d" % rec["align"]
    s += " thread %d" % rec["thread"]
    if rec.get("label"):
        s += " [%s]" % rec["label"]
    return s


def entry_str(e):
    if e is None:
        return "not listed"
    return "listed %s/%s size %s chunk %s chunk_size %s arena %s" % (
        e.get("state"), e.get("where"), e.get("size"), e.get("chunk"),
        e.get("chunk_size"), e.get("arena"))


def live(record):
    return [r for r in record["allocations"] if r["live"]]


def freed(record):
    return [r for r in record["allocations"] if not r["live"]]


def freed_unreused(record):
    return [r for r in freed(record) if not r["reused"]]


# ------------------------------------------------------------ fixture sanity


def oracle_chunk_index(oracle):
    """chunk address -> (size, state, arena index) over all arena heaps."""
    idx = {}
    for a in oracle["arenas"]:
        for c, size, state in a["chunks"]:
            idx[hx(c)] = (size, state, a["index"])
    return idx


def check_fixture(ck, snap, oracle):
    name = snap.label
    rec = snap.record
    before, after = rec["mallinfo2_before_record"], rec["mallinfo2"]
    if snap.kind == "gcore":  # the record is the same for every core kind
        ck.case("%s: fixture self-checks (truth.c) hold" % name,
                  ["%s at %s" % (c["what"], c["address"]) for c in rec["selfcheck"]])
        ck.case("%s: fixture wrote its record without touching the heap" % name,
                  ["%s: %d before writing, %d after" % (f, before[f], after[f])
                   for f in MALLINFO_FIELDS if before[f] != after[f]])
    if oracle is None:
        return

    ck.case("%s: fixture oracle (gdb) met no inconsistency" % name,
              oracle["problems"])
    omi = oracle["mallinfo2"]
    ck.case("%s: fixture oracle's mallinfo2 matches the process's" % name,
              ["%s: process %d, gdb %d" % (f, after[f], omi[f])
               for f in MALLINFO_FIELDS if after[f] != omi[f]])

    chunks = oracle_chunk_index(oracle)
    tops = {hx(a["top"]) for a in oracle["arenas"]}
    tid_of_thread = {t["index"]: t["tid"] for t in rec["threads"]}
    alive = {t["index"]: t["alive"] for t in rec["threads"]}
    tcache_lwp = {}
    for t in oracle["threads"]:
        for c, _size, _bin in t["entries"]:
            tcache_lwp[hx(c)] = t["lwp"]

    problems = []
    for r in live(rec):
        c = hx(r["chunk"])
        got = chunks.get(c)
        if r["mmapped"]:
            if got:
                problems.append("%s: mmapped, but gdb walks it as a heap chunk"
                                % describe(r))
            continue
        if got is None:
            problems.append("%s: live heap chunk %#x not found by gdb's heap walk"
                            % (describe(r), c))
        elif got[1] != "used" or got[0] != r["chunk_size"]:
            problems.append("%s: gdb says chunk %#x is %s size %#x, record "
                            "says used size %#x" % (describe(r), c, got[1],
                                                     got[0], r["chunk_size"]))
    for r in freed_unreused(rec):
        c = hx(r["chunk"])
        got = chunks.get(c)
        exp = r["expect"]
        state = got[1] if got else None
        if exp == "tcache":
            lwp = tid_of_thread.get(r["thread"])
            if c not in tcache_lwp:
                problems.append("%s: expected in tcache, gdb: %s" % (describe(r), state))
            elif alive.get(r["thread"]) and tcache_lwp[c] != lwp:
                problems.append("%s: in the tcache of lwp %d, not of its "
                                "thread %s" % (describe(r), tcache_lwp[c], lwp))
        elif exp in ("fastbin", "bin"):
            if state != exp:
                problems.append("%s: expected %s, gdb: %s" % (describe(r), exp, state))
        elif exp == "top":
            if c not in tops:
                problems.append("%s: expected to start top, gdb: %s" % (describe(r), state))
        elif exp == "merged":
            if got is not None:
                problems.append("%s: expected merged away, gdb: chunk %s"
                                % (describe(r), state))
        elif exp == "unmapped":
            if got is not None:
                problems.append("%s: expected unmapped, gdb: chunk %s"
                                % (describe(r), state))
        elif state == "used" and not r["mmapped"]:
            problems.append("%s: freed, but gdb: used" % describe(r))
    ck.case("%s: fixture expectations hold in the core (gdb)" % name, problems)

    # Arena labels agree with gdb's arenas.
    label_arenas = {}
    for r in live(rec):
        got = chunks.get(hx(r["chunk"]))
        if got and not r["mmapped"]:
            label_arenas.setdefault(r["arena"], set()).add(got[2])
    problems = ["arena label %r spans gdb arenas %s" % (k, sorted(v))
                for k, v in label_arenas.items() if len(v) != 1]
    seen = {}
    for k, v in label_arenas.items():
        if len(v) == 1:
            a = next(iter(v))
            if a in seen:
                problems.append("arena labels %r and %r are both gdb arena %d"
                                % (seen[a], k, a))
            seen[a] = k
    ck.case("%s: fixture arena labels match gdb's arenas" % name, problems)


# ------------------------------------------------------------ heapsift


def index_entries(entries):
    by_addr = {}
    by_chunk = {}
    for e in entries:
        by_addr.setdefault(hx(e["address"]), []).append(e)
        if "chunk" in e:
            by_chunk.setdefault(hx(e["chunk"]), []).append(e)
    return by_addr, by_chunk


def used_at(by_addr, addr):
    for e in by_addr.get(addr, []):
        if e.get("state") == "used":
            return e
    return None


def any_at(by_addr, addr):
    lst = by_addr.get(addr, [])
    return lst[0] if lst else None


def check_entry_shapes(ck, name, entries):
    problems = []
    for e in entries:
        # An mmapped chunk belongs to no arena; heapsift leaves "arena" out.
        keys = ("address", "size", "state", "chunk", "chunk_size", "where")
        if e.get("where") != "mmapped":
            keys += ("arena",)
        missing = [k for k in keys if k not in e]
        if missing:
            problems.append("entry %s lacks %s" % (e, ", ".join(missing)))
            continue
        st, wh = e["state"], e["where"]
        if st not in ("used", "free"):
            problems.append("%s: state %r" % (e["address"], st))
        elif st == "used" and wh not in USED_WHERE:
            problems.append("%s: used but where %r" % (e["address"], wh))
        elif st == "free" and wh not in FREE_WHERE:
            problems.append("%s: free but where %r" % (e["address"], wh))
        addr, chunk, cs = hx(e["address"]), hx(e["chunk"]), e["chunk_size"]
        if addr != chunk + 16:
            problems.append("%s: address is not chunk %s + 16" % (e["address"], e["chunk"]))
        if cs < 16 or cs % 16:
            problems.append("%s: chunk_size %s not a multiple of 16" % (e["address"], cs))
        if st == "used" and wh in ("heap", "internal") and e["size"] != cs - 8:
            problems.append("%s: used heap chunk size %s != chunk_size %s - 8"
                            % (e["address"], e["size"], cs))
        if st == "used" and wh == "mmapped" and e["size"] != cs - 16:
            problems.append("%s: mmapped size %s != chunk_size %s - 16"
                            % (e["address"], e["size"], cs))
    ck.case("%s: every entry is well formed (address = chunk + 16, "
              "usable = chunk_size - 8 or - 16, state matches where)" % name, problems)


def check_list_totals(ck, name, lst):
    entries = lst["allocations"]
    p = []
    if "count" in lst and lst["count"] != len(entries):
        p.append("count %s, %d entries" % (lst["count"], len(entries)))
    if "bytes" in lst and lst["bytes"] != sum(e.get("size", 0) for e in entries):
        p.append("bytes %s, sizes add up to %d"
                 % (lst["bytes"], sum(e.get("size", 0) for e in entries)))
    if lst.get("partial"):
        p.append("partial is true on an intact core")
    ck.case("%s: list count/bytes add up, partial is false" % name, p)


def check_overlaps(ck, name, entries):
    problems = []
    ranges = sorted((hx(e["chunk"]), hx(e["chunk"]) + e["chunk_size"], e)
                    for e in entries if "chunk" in e)
    for (lo1, hi1, e1), (lo2, hi2, e2) in zip(ranges, ranges[1:]):
        if lo2 < hi1:
            problems.append("chunk %#x-%#x (%s/%s) overlaps chunk %#x-%#x (%s/%s)"
                            % (lo1, hi1, e1["state"], e1["where"],
                               lo2, hi2, e2["state"], e2["where"]))
    ck.case("%s: listed chunks do not overlap" % name, problems)
    problems = []
    used = sorted((hx(e["address"]), hx(e["address"]) + e["size"])
                  for e in entries if e.get("state") == "used")
    for (lo1, hi1), (lo2, hi2) in zip(used, used[1:]):
        if lo2 < hi1:
            problems.append("used %#x+%d overlaps used %#x+%d"
                            % (lo1, hi1 - lo1, lo2, hi2 - lo2))
    ck.case("%s: used allocations do not overlap" % name, problems)


def check_records(ck, name, rec, entries):
    by_addr, by_chunk = index_entries(entries)

    # Live allocations: listed used, with exactly the usable size.
    size_p, chunk_p, where_p = [], [], []
    found = 0
    for r in live(rec):
        addr = hx(r["address"])
        e = used_at(by_addr, addr)
        if e is None:
            size_p.append("%s: expected used size %d, %s"
                          % (describe(r), r["size"], entry_str(any_at(by_addr, addr))))
            continue
        found += 1
        if e["size"] != r["size"]:
            size_p.append("%s: expected size %d, got %d" % (describe(r), r["size"], e["size"]))
        if hx(e.get("chunk", "0x0")) != hx(r["chunk"]) or e.get("chunk_size") != r["chunk_size"]:
            chunk_p.append("%s: expected chunk %s size %d, %s"
                           % (describe(r), r["chunk"], r["chunk_size"], entry_str(e)))
        want = "mmapped" if r["mmapped"] else "heap"
        if e.get("where") != want:
            where_p.append("%s: expected where %s, %s" % (describe(r), want, entry_str(e)))
    nlive = len(live(rec))
    ck.case("%s: all %d live allocations listed used with the exact size"
              % (name, nlive), size_p)
    ck.case("%s: live allocations have the recorded chunk and chunk_size" % name, chunk_p)
    ck.case("%s: live allocations have where heap/mmapped as recorded" % name, where_p)
    ck.check("%s: count: %d of %d recorded live allocations found"
             % (name, found, nlive), found == nlive)

    # Freed allocations.
    not_used, placed = [], []
    used_ranges = sorted((hx(e["address"]), hx(e["address"]) + e["size"], e)
                         for e in entries if e.get("state") == "used")
    starts = [u[0] for u in used_ranges]
    for r in freed_unreused(rec):
        addr, chunk = hx(r["address"]), hx(r["chunk"])
        e = used_at(by_addr, addr)
        if e is not None:
            not_used.append("%s: freed (expect %s) but %s"
                            % (describe(r), r["expect"], entry_str(e)))
            continue
        exp = r["expect"]
        if exp in ("tcache", "fastbin", "bin"):
            # A known free chunk: no used allocation may contain it either.
            i = bisect.bisect_right(starts, addr) - 1
            if i >= 0 and used_ranges[i][0] <= addr < used_ranges[i][1]:
                not_used.append("%s: freed (expect %s) but inside used %s"
                                % (describe(r), exp, entry_str(used_ranges[i][2])))
            e = any_at(by_addr, addr)
            if e is None or e.get("state") != "free" or e.get("where") != exp:
                placed.append("%s: expected free/%s chunk %s size %d, %s"
                              % (describe(r), exp, r["chunk"], r["chunk_size"], entry_str(e)))
            elif exp in ("tcache", "fastbin") and e.get("chunk_size") != r["chunk_size"]:
                placed.append("%s: expected %s chunk_size %d, %s"
                              % (describe(r), exp, r["chunk_size"], entry_str(e)))
        elif exp == "top":
            es = [x for x in by_chunk.get(chunk, []) if x.get("where") == "top"]
            if not es:
                placed.append("%s: expected the top chunk to start at %s, %s"
                              % (describe(r), r["chunk"],
                                 entry_str((by_chunk.get(chunk) or [None])[0])))
        elif exp == "unmapped":
            e = any_at(by_addr, addr) or (by_chunk.get(chunk) or [None])[0]
            if e is not None:
                placed.append("%s: unmapped, but %s" % (describe(r), entry_str(e)))
        elif exp == "merged":
            e = (by_chunk.get(chunk) or [None])[0]
            if e is not None:
                placed.append("%s: coalesced into a neighbour, but %s"
                              % (describe(r), entry_str(e)))
    ck.case("%s: no freed (not reused) allocation is listed used" % name, not_used)
    ck.case("%s: freed allocations are in the expected tcache/fastbin/bin/top "
              "or gone" % name, placed)

    # Same where, per recorded kind, as separate checks for a readable report.
    for kind in ("tcache", "fastbin", "mmapped"):
        if kind == "mmapped":
            rs = [r for r in live(rec) if r["mmapped"]]
        else:
            rs = [r for r in freed_unreused(rec) if r["expect"] == kind]
        bad = []
        for r in rs:
            e = any_at(by_addr, hx(r["address"]))
            if e is None or e.get("where") != kind:
                bad.append("%s: expected where %s, %s" % (describe(r), kind, entry_str(e)))
        if rs:
            ck.case("%s: all %d recorded %s chunks are listed where %s"
                      % (name, len(rs), kind, kind), bad)

    # Arena ids follow the fixture's arena labels.
    label_ids = {}
    for r in live(rec):
        if r["mmapped"]:
            continue
        e = used_at(by_addr, hx(r["address"]))
        if e is not None and "arena" in e:
            label_ids.setdefault(r["arena"], set()).add(e["arena"])
    problems = ["arena label %r spread over heapsift arenas %s" % (k, sorted(v))
                for k, v in label_ids.items() if len(v) != 1]
    owner = {}
    for k, v in label_ids.items():
        if len(v) == 1:
            a = next(iter(v))
            if a in owner:
                problems.append("arena labels %r and %r share heapsift arena %s"
                                % (owner[a], k, a))
            owner[a] = k
    ck.case("%s: allocations are in the arenas the fixture expects "
              "(labels %s)" % (name, ", ".join(sorted(label_ids))), problems)


def check_mallinfo(ck, name, rec, info, entries, oracle):
    want = rec["mallinfo2"]
    try:
        got = info["allocator"]["mallinfo2"]
    except (KeyError, TypeError):
        ck.check("%s: info has allocator.mallinfo2" % name, False,
                 "keys: %s" % sorted(info))
        return
    # Before glibc 2.33 the fixture could only call mallinfo(), whose int
    # fields the record holds modulo 2^32 (truth.c).
    wrap = rec.get("mallinfo_call") == "mallinfo"

    def same(f):
        g = got.get(f)
        if wrap and isinstance(g, int):
            g %= 1 << 32
        return g == want[f]
    ck.case("%s: info mallinfo2 equals the process's %s()"
              % (name, rec.get("mallinfo_call", "mallinfo2")),
              ["%s: expected %s, got %s" % (f, want[f], got.get(f))
               for f in MALLINFO_FIELDS if not same(f)])
    try:
        ck.check("%s: info allocator name is glibc" % name,
                 info["allocator"].get("name") == "glibc",
                 "got %r" % info["allocator"].get("name"))
    except (KeyError, TypeError, AttributeError):
        pass

    # The listing must add up to the process's mallinfo2 (int_mallinfo).
    def total(where, state=None):
        es = [e for e in entries if e.get("where") == where
              and (state is None or e.get("state") == state)]
        return len(es), sum(e.get("chunk_size", 0) for e in es)

    nfast, sfast = total("fastbin", "free")
    nbin, sbin = total("bin", "free")
    ntop, stop = total("top", "free")
    nmm, smm = total("mmapped", "used")
    prev = {hx(r["chunk"]): r.get("prev_size", 0)
            for r in live(rec) if r["mmapped"]}
    smm_maps = sum(e["chunk_size"] + prev.get(hx(e["chunk"]), 0)
                   for e in entries if e.get("where") == "mmapped"
                   and e.get("state") == "used")
    p = []
    if nfast != want["smblks"]:
        p.append("smblks %d, listed fastbin chunks %d" % (want["smblks"], nfast))
    if sfast != want["fsmblks"]:
        p.append("fsmblks %d, listed fastbin bytes %d" % (want["fsmblks"], sfast))
    # int_mallinfo counts top as a block in every arena, even the initial
    # zero-sized one of a main arena that never allocated.
    arenas = info.get("allocator", {}).get("arenas")
    narenas = len(arenas) if isinstance(arenas, list) else ntop
    if nbin + narenas != want["ordblks"]:
        p.append("ordblks %d, listed bin chunks %d + %d arenas"
                 % (want["ordblks"], nbin, narenas))
    if ntop > narenas:
        p.append("%d top chunks listed for %d arenas" % (ntop, narenas))
    if sbin + stop + sfast != want["fordblks"]:
        p.append("fordblks %d, listed bin %d + top %d + fastbin %d = %d"
                 % (want["fordblks"], sbin, stop, sfast, sbin + stop + sfast))
    if nmm != want["hblks"]:
        p.append("hblks %d, listed mmapped chunks %d" % (want["hblks"], nmm))
    if smm_maps != want["hblkhd"]:
        p.append("hblkhd %d, listed mmapped chunk bytes (+ alignment lead) %d"
                 % (want["hblkhd"], smm_maps))
    if oracle is not None:
        main_top = hx(oracle["arenas"][0]["top"])
        tops = [e for e in entries if e.get("where") == "top"
                and hx(e["chunk"]) == main_top]
        if want["keepcost"] == 0 and not tops:
            pass  # no heap yet: no top chunk to list
        elif not tops or tops[0]["chunk_size"] != want["keepcost"]:
            p.append("keepcost %d, main arena top chunk %#x: %s"
                     % (want["keepcost"], main_top,
                        entry_str(tops[0] if tops else None)))
    ck.case("%s: list totals agree with mallinfo2 (fastbin, bin+top, "
              "mmapped counts and bytes; keepcost)" % name, p)


def check_against_oracle(ck, name, entries, info, oracle):
    """Every heap chunk gdb sees must be listed with the same state."""
    by_chunk = {}
    for e in entries:
        if e.get("where") != "mmapped" and "chunk" in e:
            by_chunk[hx(e["chunk"])] = e
    expect_where = {"used": ("used", "heap"), "internal": ("used", "internal"),
                    "tcache": ("free", "tcache"), "fastbin": ("free", "fastbin"),
                    "bin": ("free", "bin"), "top": ("free", "top")}
    problems, internal_p = [], []
    seen = set()
    for a in oracle["arenas"]:
        for c, size, state in a["chunks"]:
            c = hx(c)
            if state == "fencepost":
                continue
            seen.add(c)
            e = by_chunk.get(c)
            want = expect_where.get(state)
            if e is None:
                msg = "chunk %#x size %#x (%s, arena %d): not listed" % (c, size, state, a["index"])
            elif e.get("chunk_size") != size or want != (e.get("state"), e.get("where")):
                msg = "chunk %#x size %#x (%s, arena %d): %s" % (c, size, state, a["index"], entry_str(e))
            else:
                continue
            (internal_p if state == "internal" else problems).append(msg)
    for c, e in sorted(by_chunk.items()):
        if c not in seen:
            problems.append("heapsift lists chunk %#x (%s/%s size %s) that gdb's heap "
                            "walk does not have" % (c, e.get("state"), e.get("where"),
                                                   e.get("chunk_size")))
    ck.case("%s: every heap chunk matches gdb's walk (address, size, state)" % name,
              problems)
    ntc = sum(1 for t in oracle["threads"] if int(t["tcache"], 16))
    ck.case("%s: the %d live threads' tcache structs are listed where internal"
              % (name, ntc), internal_p)

    # Arenas in info.
    arenas = info.get("allocator", {}).get("arenas")
    if isinstance(arenas, list):
        got = sorted((hx(a.get("address", "0x0")), hx(a.get("top", "0x0")))
                     for a in arenas)
        want = sorted((hx(a["address"]), hx(a["top"])) for a in oracle["arenas"])
        ck.check("%s: info lists the %d arenas with their tops" % (name, len(want)),
                 got == want, "expected %s\ngot      %s"
                 % ([(hex(x), hex(y)) for x, y in want],
                    [(hex(x), hex(y)) for x, y in got]))


def check_filters(ck, name, snap, entries):
    """--state used (the default) / free, --min-size: subsets of --state all."""
    def key(e):
        return (e.get("address"), e.get("state"), e.get("size"), e.get("where"))

    try:
        default = hstest.heapsift_cached("list", snap)["allocations"]
        free = hstest.heapsift_cached("list", snap, "--state", "free")["allocations"]
        big = hstest.heapsift_cached("list", snap, "--state", "all",
                                     "--min-size", "1000")["allocations"]
    except (HsError, KeyError, TypeError) as e:
        ck.check("%s: list --state/--min-size run" % name, False, str(e))
        return
    want_used = sorted(key(e) for e in entries if e.get("state") == "used")
    want_free = sorted(key(e) for e in entries if e.get("state") == "free")
    want_big = sorted(key(e) for e in entries if e.get("size", 0) >= 1000)
    ck.check("%s: list (default --state used) = the used part of --state all" % name,
             sorted(map(key, default)) == want_used,
             "%d entries, expected %d" % (len(default), len(want_used)))
    ck.check("%s: list --state free = the free part of --state all" % name,
             sorted(map(key, free)) == want_free,
             "%d entries, expected %d" % (len(free), len(want_free)))
    ck.check("%s: list --min-size 1000 keeps exactly sizes >= 1000" % name,
             sorted(map(key, big)) == want_big,
             "%d entries, expected %d" % (len(big), len(want_big)))


def check_heapsift(ck, snap, oracle):
    name = snap.label
    try:
        lst = hstest.heapsift_cached("list", snap, "--state", "all")
        entries = lst["allocations"]
        if not isinstance(entries, list):
            raise HsError("allocations is not a list")
    except (HsError, KeyError, TypeError) as e:
        ck.check("%s: heapsift list --state all --format json" % name, False, str(e))
        return
    ck.check("%s: heapsift list --state all --format json" % name, True)
    try:
        info = hstest.heapsift_cached("info", snap)
    except HsError as e:
        ck.check("%s: heapsift info --format json" % name, False, str(e))
        info = None
    else:
        ck.check("%s: heapsift info --format json" % name, True)

    check_entry_shapes(ck, name, entries)
    check_list_totals(ck, name, lst)
    check_overlaps(ck, name, entries)
    check_records(ck, name, snap.record, entries)
    if info is not None:
        check_mallinfo(ck, name, snap.record, info, entries, oracle)
    if oracle is not None:
        check_against_oracle(ck, name, entries, info or {}, oracle)
    if info is not None and isinstance(info.get("threads"), list):
        want = sorted(t["tid"] for t in snap.record["threads"] if t["alive"])
        got = sorted(t.get("tid") for t in info["threads"])
        ck.check("%s: info lists the fixture's %d live threads" % (name, len(want)),
                 got == want, "expected tids %s, got %s" % (want, got))
    if info is not None:
        check_signal(ck, snap, info)
        alloc = info.get("allocator") or {}
        ck.check("%s: info: the walk accounts for all of system_mem and mmapped_mem"
                 % name, alloc.get("unaccounted_bytes") == 0 and alloc.get("partial") is False,
                 "unaccounted_bytes %r, partial %r" % (alloc.get("unaccounted_bytes"),
                                                      alloc.get("partial")))
    warnings = list(lst.get("warnings") or []) + list((info or {}).get("warnings") or [])
    ck.case("%s: no warnings on a clean heap" % name, [str(w) for w in warnings])
    if snap.name in FILTER_FIXTURES and snap.kind == "gcore":
        check_filters(ck, name, snap, entries)


HS_REUSE_CORES = os.environ.get("HS_REUSE_CORES") == "1"


def check_signal(ck, snap, info):
    """The fixture stops itself with SIGSTOP: its gcore is a snapshot, and
    says what stopped it.  The kernel's core is dumped by the SIGABRT this
    process sent with kill(2): info names the sender, not an address."""
    name = snap.label
    sig = info.get("signal")
    if snap.kind == "gcore":
        # gcore records no signal, or the SIGSTOP that stopped the process
        ck.check("%s: info: a snapshot" % name,
                 info.get("snapshot") is True and sig is None
                 and info.get("stopped_by") in (None, "STOP"),
                 "snapshot %r, signal %r, stopped_by %r"
                 % (info.get("snapshot"), sig, info.get("stopped_by")))
        if snap.name == "fx_sizes":
            check_stop_signal(ck, snap)
    elif HS_REUSE_CORES:
        return  # taken by another process
    else:
        ok = (isinstance(sig, dict) and sig.get("name") == "ABRT"
              and sig.get("code") == 0 and sig.get("sender_pid") == os.getpid()
              and sig.get("sender_uid") == os.getuid() and "address" not in sig
              and info.get("snapshot") is False)
        ck.check("%s: info: SIGABRT sent by pid %d (uid %d), no address"
                 % (name, os.getpid(), os.getuid()), ok,
                 "signal %r, snapshot %r" % (sig, info.get("snapshot")))


def check_stop_signal(ck, snap):
    """A copy of the gcore whose first thread says it stopped on SIGSTOP
    (si_signo 19, si_code 128, pr_cursig 19, as some gcores of a process
    stopped by SIGSTOP do): still a snapshot, not a crash."""
    import corrupt_core
    import shutil
    import struct
    copy = snap.core + ".sigstop"
    shutil.copyfile(snap.core, copy)
    try:
        off = corrupt_core.prstatus_pids(copy)[0][0] - corrupt_core.PRSTATUS_PID
        with open(copy, "r+b") as f:
            f.seek(off)
            f.write(struct.pack("<iii", 19, 128, 0))  # pr_info
            f.write(struct.pack("<h", 19))             # pr_cursig
        r = hstest.run_heapsift(["info", copy, "--format", "json"])
        try:
            info = json.loads(r.out)
        except ValueError:
            info = {}
        text = hstest.run_heapsift(["info", copy]).out
        ck.check("%s: info: a core stopped by SIGSTOP (code 128) is a snapshot" % snap.label,
                 r.rc == 0 and info.get("snapshot") is True
                 and info.get("signal") is None and info.get("stopped_by") == "STOP"
                 and "snapshot of a process stopped by SIGSTOP" in text,
                 "exit %d, snapshot %r, signal %r, stopped_by %r; text %r"
                 % (r.rc, info.get("snapshot"), info.get("signal"),
                    info.get("stopped_by"), text[:300]))
    finally:
        os.unlink(copy)


def check_same_listing(ck, snaps):
    """gcore and the kernel's dump of the same stopped process: same heap."""
    def key(e):
        return (e.get("address"), e.get("size"), e.get("state"), e.get("where"),
                e.get("chunk"), e.get("chunk_size"), e.get("arena"))
    lists = {}
    for kind, snap in snaps.items():
        try:
            lists[kind] = sorted(map(key, hstest.heapsift_cached(
                "list", snap, "--state", "all")["allocations"]))
        except (HsError, KeyError, TypeError):
            return  # already reported
    if len(lists) == 2:
        a, b = lists["gcore"], lists["kernel"]
        sa, sb = set(a), set(b)
        diff = ["only in the gcore:  %s" % (x,) for x in sorted(sa - sb)]
        diff += ["only in the kernel core: %s" % (x,) for x in sorted(sb - sa)]
        ck.case("%s: same listing from the gcore and the kernel core"
                  % snaps["gcore"].name, diff)


def check_cli(ck, snap):
    """Exit codes: 2 for usage errors, 1 for analysis errors."""
    cases = [
        (["list"], 2, "list without a core"),
        (["no-such-command", snap.core], 2, "unknown command"),
        (["list", snap.core, "--state", "bogus"], 2, "bad --state"),
        (["list", snap.core, "--format", "bogus"], 2, "bad --format"),
        (["list", snap.binary, "--format", "json"], 1, "an executable given as the core"),
    ]
    for args, want, what in cases:
        try:
            p = hstest.run_heapsift(args)
        except HsError as e:
            ck.check("cli: %s exits %d" % (what, want), False, str(e))
            continue
        ck.check("cli: %s exits %d" % (what, want), p.rc == want,
                 "heapsift %s -> exit %d, stderr: %s"
                 % (" ".join(args), p.rc, p.err.strip()[-300:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--no-oracle", action="store_true",
                    help="skip gdb (fixture sanity checks and chunk-by-chunk comparison)")
    ap.add_argument("--cores", default=os.environ.get("HS_CORE_KINDS", "gcore,kernel"),
                    help="core kinds to test: gcore, kernel or both (default)")
    ap.add_argument("fixtures", nargs="*", help="default: all")
    args = ap.parse_args()
    names = args.fixtures or FIXTURES
    kinds = [k for k in args.cores.split(",") if k]
    ck = hstest.Checker(quiet=not args.verbose)
    have_heapsift = hstest.heapsift_available()
    if not have_heapsift:
        ck.check("heapsift binary exists", False,
                 "%s is missing: only the fixture checks ran" % hstest.HEAPSIFT)
    first = None
    for name in names:
        failed_before = ck.failed
        done = {}
        for kind in kinds:
            label = name if kind == "gcore" else "%s[%s]" % (name, kind)
            try:
                snap = hstest.get_core(name, kind)
            except HsError as e:
                if kind == "kernel" and "not taken" in str(e):
                    print("SKIP %s: %s" % (label, e))
                else:
                    ck.check("%s: fixture ran and was cored" % label, False, str(e))
                continue
            first = first or snap
            oracle = None
            if not args.no_oracle:
                try:
                    oracle = hstest.gdb_oracle(snap)
                except HsError as e:
                    ck.check("%s: fixture oracle (gdb) ran" % label, False, str(e))
            check_fixture(ck, snap, oracle)
            if have_heapsift:
                check_heapsift(ck, snap, oracle)
            done[kind] = snap
        if have_heapsift and len(done) == 2:
            check_same_listing(ck, done)
        if (ck.failed == failed_before and done and have_heapsift
                and os.environ.get("HS_KEEP_CORES") != "1"):
            hstest.remove_cores(name)
    if have_heapsift and first is not None:
        check_cli(ck, first)
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())
