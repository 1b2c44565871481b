# gdb_oracle.py: read glibc's malloc state out of a core with gdb and the
# libc6-dbg debug info, independently of heapsift, and write it as JSON.
#
#   HS_ORACLE_OUT=out.json gdb -batch -nx -q -x tests/gdb_oracle.py BINARY CORE
#   HS_ORACLE_SAFE_LINKING=0: glibc before 2.32, whose tcache and fastbin links
#   are plain pointers
#
# Output:
#   {"mp": {n_mmaps, mmapped_mem, mmap_threshold, sbrk_base, ...},
#    "arenas": [{"index", "address", "top", "top_size", "system_mem",
#                "attached_threads", "on_free_list",
#                "fastbins": [[chunk, size], ...],
#                "bins": [[chunk, size, bin_index], ...],
#                "heaps": [{"address", "size", "first_chunk"}],
#                "chunks": [[chunk, size, state], ...]}],
#    "threads": [{"lwp", "tcache", "arena", "counts_ok",
#                 "entries": [[chunk, size, bin], ...]}],
#    "mallinfo2": {...}   computed from the above exactly as int_mallinfo
#                         (malloc.c) does,
#    "problems": [...]}   anything inconsistent met on the way
#
# state of a heap chunk: used, internal (a live thread's tcache struct),
# tcache, fastbin, bin, top.  Mmapped chunks are not enumerated (nothing in
# the allocator links them).
#
# Layout facts come from DWARF (gdb types); the algorithms follow glibc 2.36
# malloc/malloc.c and malloc/arena.c.

import json
import os

import gdb

OUT = os.environ.get("HS_ORACLE_OUT", "oracle.json")
PREV_INUSE, IS_MMAPPED, NON_MAIN_ARENA = 1, 2, 4
# HEAP_MAX_SIZE = 2 * DEFAULT_MMAP_THRESHOLD_MAX = 2 * 4 * 1024 * 1024 * 8
HEAP_MAX = 64 * 1024 * 1024
LIMIT = 10_000_000

inf = gdb.selected_inferior()
problems = []


def u64(addr):
    return int.from_bytes(bytes(inf.read_memory(addr, 8)), "little")


def ev(expr):
    return gdb.parse_and_eval(expr)


def offset(typename, field):
    t = gdb.lookup_type(typename)
    for f in t.fields():
        if f.name == field:
            return f.bitpos // 8
    raise RuntimeError("no field %s in %s" % (field, typename))


def sizeof(typename):
    return gdb.lookup_type(typename).sizeof


# glibc before 2.32 stores tcache and fastbin links as they are
SAFE_LINKING = os.environ.get("HS_ORACLE_SAFE_LINKING", "1") == "1"


def reveal(pos, ptr):
    # Safe-linking (malloc.c PROTECT_PTR/REVEAL_PTR): (pos >> 12) ^ ptr
    return (pos >> 12) ^ ptr if SAFE_LINKING else ptr


def chunksize(c):
    return u64(c + 8) & ~7


def main():
    O_FD = offset("struct malloc_chunk", "fd")
    O_BK = offset("struct malloc_chunk", "bk")
    O_TOP = offset("struct malloc_state", "top")
    O_FAST = offset("struct malloc_state", "fastbinsY")
    O_BINS = offset("struct malloc_state", "bins")
    O_NEXT = offset("struct malloc_state", "next")
    O_NEXT_FREE = offset("struct malloc_state", "next_free")
    O_ATT = offset("struct malloc_state", "attached_threads")
    O_SYSMEM = offset("struct malloc_state", "system_mem")
    NFAST = gdb.lookup_type("struct malloc_state")["fastbinsY"].type.range()[1] + 1
    NBINS_X2 = gdb.lookup_type("struct malloc_state")["bins"].type.range()[1] + 1
    NBINS = NBINS_X2 // 2 + 1  # bins[NBINS * 2 - 2]
    SZ_STATE = sizeof("struct malloc_state")
    SZ_HEAPINFO = sizeof("heap_info")
    O_H_AR = offset("heap_info", "ar_ptr")
    O_H_PREV = offset("heap_info", "prev")
    O_H_SIZE = offset("heap_info", "size")

    mp = ev("mp_")
    mpd = {}
    for f in mp.type.fields():
        v = mp[f.name]
        try:
            mpd[f.name] = int(v)
        except gdb.error:
            pass
    main_arena = int(ev("&main_arena"))

    # Arenas: the ring through next, and the free list through next_free.
    ring = []
    a = main_arena
    while True:
        ring.append(a)
        a = u64(a + O_NEXT)
        if a == main_arena:
            break
        if len(ring) > 1024 or a == 0:
            problems.append("arena ring does not close")
            break
    free_list = set()
    fl = int(ev("free_list"))
    while fl and fl not in free_list and len(free_list) < 1024:
        free_list.add(fl)
        fl = u64(fl + O_NEXT_FREE)

    # Threads: tcache pointers (TLS, read through libthread_db by gdb).
    threads = []
    tcache_of = {}  # chunk -> (where, lwp)
    tcache_structs = set()
    for th in sorted(inf.threads(), key=lambda t: t.num):
        th.switch()
        lwp = th.ptid[1]
        tc = int(ev("tcache"))
        arena = int(ev("thread_arena"))
        entry = {"lwp": lwp, "tcache": hex(tc), "arena": hex(arena),
                 "entries": [], "counts_ok": True}
        if tc:
            tcache_structs.add(tc - 16)
            t = ev("*(tcache_perthread_struct *)%d" % tc)
            nb = t.type["counts"].type.range()[1] + 1
            for i in range(nb):
                count = int(t["counts"][i])
                e = int(t["entries"][i])
                n = 0
                seen = set()
                while e and n < 10000:
                    if e in seen:
                        problems.append("tcache cycle lwp %d bin %d" % (lwp, i))
                        break
                    seen.add(e)
                    c = e - 16
                    entry["entries"].append([hex(c), chunksize(c), i])
                    tcache_of[c] = lwp
                    n += 1
                    e = reveal(e, u64(e))
                if n != count:
                    entry["counts_ok"] = False
                    problems.append("tcache lwp %d bin %d: count %d, list %d"
                                    % (lwp, i, count, n))
        threads.append(entry)

    arenas = []
    mi = dict(arena=0, ordblks=0, smblks=0, hblks=0, hblkhd=0, usmblks=0,
              fsmblks=0, uordblks=0, fordblks=0, keepcost=0)
    for idx, av in enumerate(ring):
        top = u64(av + O_TOP)
        top_size = chunksize(top)
        sysmem = u64(av + O_SYSMEM)
        fast = []
        fastset = set()
        for i in range(NFAST):
            p = u64(av + O_FAST + 8 * i)
            n = 0
            while p and n < LIMIT:
                if p in fastset:
                    problems.append("fastbin cycle arena %d bin %d" % (idx, i))
                    break
                if p & 15:
                    problems.append("misaligned fastbin chunk %#x" % p)
                    break
                fastset.add(p)
                fast.append([hex(p), chunksize(p)])
                p = reveal(p + O_FD, u64(p + O_FD))
                n += 1
        bins = []
        binset = set()
        for i in range(1, NBINS):
            b = av + O_BINS + (i - 1) * 16 - O_FD
            p = u64(b + O_BK)
            n = 0
            while p != b and n < LIMIT:
                if p in binset:
                    problems.append("bin cycle arena %d bin %d" % (idx, i))
                    break
                binset.add(p)
                bins.append([hex(p), chunksize(p), i])
                p = u64(p + O_BK)
                n += 1

        # int_mallinfo (malloc.c)
        fastavail = sum(s for _, s in fast)
        avail = top_size + fastavail + sum(s for _, s, _ in bins)
        mi["smblks"] += len(fast)
        mi["ordblks"] += 1 + len(bins)
        mi["fordblks"] += avail
        mi["uordblks"] += sysmem - avail
        mi["arena"] += sysmem
        mi["fsmblks"] += fastavail
        if av == main_arena:
            mi["hblks"] = mpd["n_mmaps"]
            mi["hblkhd"] = mpd["mmapped_mem"]
            mi["usmblks"] = 0
            mi["keepcost"] = top_size

        # Heaps and the chunks in them.
        heaps = []
        if av == main_arena:
            # The brk heap, then any pieces the caller names: when brk cannot
            # grow, sysmalloc mmaps a new piece for the main arena that only
            # top points into (HS_ORACLE_SEGMENTS: first chunks, hex, comma
            # separated).  Each piece is walked up to top or a fencepost.
            base = mpd["sbrk_base"]
            starts = [(base + 15) & ~15] if base else []
            starts += [int(x, 16) for x in
                       os.environ.get("HS_ORACLE_SEGMENTS", "").split(",") if x]
            for first in starts:
                inside = first <= top < first + sysmem
                heaps.append({"address": hex(first), "size": None,
                              "first_chunk": hex(first),
                              "end": top + top_size if inside
                              else first + sysmem})
        else:
            h = top & ~(HEAP_MAX - 1)
            n = 0
            while h and n < 4096:
                if u64(h + O_H_AR) != av:
                    problems.append("heap %#x does not point back to arena %#x"
                                    % (h, av))
                    break
                prev = u64(h + O_H_PREV)
                if prev == 0:  # the arena's first heap holds the arena
                    start = av + SZ_STATE
                    if (start + 16) & 15:
                        start += 16 - ((start + 16) & 15)
                else:
                    start = h + SZ_HEAPINFO
                hsize = u64(h + O_H_SIZE)
                heaps.append({"address": hex(h), "size": hsize,
                              "first_chunk": hex(start),
                              "end": (top + top_size) if n == 0 else h + hsize})
                h = prev
                n += 1
            heaps.reverse()
        chunks = []
        for hp in heaps:
            c = int(hp["first_chunk"], 16)
            end = hp["end"]
            while c < end:
                raw = u64(c + 8)
                size = raw & ~7
                if c == top:
                    chunks.append([hex(c), size, "top"])
                    break
                if size <= 16:  # fencepost pair at the end of a heap
                    chunks.append([hex(c), size, "fencepost"])
                    fenceposts = chunks[-2:]
                    if size == 0 or (len(fenceposts) == 2 and
                                     fenceposts[0][2] == "fencepost"):
                        break
                    c += size
                    continue
                if size & 15 or c + size > end + 16:
                    problems.append("bad chunk size %#x at %#x" % (raw, c))
                    break
                nxt = c + size
                inuse = (u64(nxt + 8) & PREV_INUSE) if nxt < end else 1
                if c in tcache_of:
                    state = "tcache"
                elif c in fastset:
                    state = "fastbin"
                elif c in binset:
                    state = "bin"
                    if inuse:
                        problems.append("bin chunk %#x marked in use" % c)
                elif c in tcache_structs:
                    state = "internal"
                elif not inuse:
                    state = "free?"
                    problems.append("free chunk %#x in no list" % c)
                else:
                    state = "used"
                chunks.append([hex(c), size, state])
                c = nxt
        for hp in heaps:
            hp["end"] = hex(hp["end"])
        arenas.append({
            "index": idx, "address": hex(av), "top": hex(top),
            "top_size": top_size, "system_mem": sysmem,
            "attached_threads": u64(av + O_ATT),
            "on_free_list": av in free_list,
            "fastbins": fast, "bins": bins, "heaps": heaps, "chunks": chunks,
        })

    with open(OUT, "w") as f:
        json.dump({"mp": mpd, "main_arena": hex(main_arena), "arenas": arenas,
                   "threads": threads, "mallinfo2": mi,
                   "problems": problems}, f)


try:
    main()
except Exception as e:  # report, do not crash gdb silently
    import traceback
    with open(OUT, "w") as f:
        json.dump({"error": "%s\n%s" % (e, traceback.format_exc())}, f)
