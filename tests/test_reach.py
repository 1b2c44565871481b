#!/usr/bin/env python3
"""Ground-truth tests of heapsift's reachability: leak classes, leak roots
and the roots `show` names.

For every reachability fixture (tests/fixtures/rc_*.c, recorder in
tests/fixtures/reach_record.h): run it until it stops, take a core with
gcore, and compare with the record the fixture wrote:
  - `list --state all`: every recorded allocation has exactly its expected
    class; with --no-unexplained, and with --conservative-roots (every
    register and red zone a root), its expected class in that mode; a block
    the fixture says only a stale word holds (a red zone of a thread in a
    system call) has "stale_ref": true;
  - `leaks` (both modes): every expected leak root is one, holding exactly
    the allocations charged to it (count and usable bytes); the summary
    agrees with `list`; no allocation the fixture did not make is leaked;
  - `show` for every recorded allocation: the class again, every holder
    the fixture names in pointed_by (the global's name, the frame's number
    and function, the thread and register, the TLS variable, the pool
    word, the parent allocation and offset), and the definitions hold:
    a leaked allocation is pointed to by leaked allocations only.
Checks named "FIXTURE: fixture: ..." test the fixture's own claims with gdb
(tests/reach_gdb_oracle.py): the word the fixture says holds a pointer does
hold it in the core, the frame a stack slot belongs to, what a register
holds.  A failure there is a test bug; every other check tests heapsift.

Words the fixture says hold a pointer without counting (dead stack below
sp - 128, an unaligned word) must not appear as roots in `show`.

Usage: test_reach.py [-v] [FIXTURE ...]
Exit status 0 when every check passed; the last line is "N passed, M failed".
Environment: see hstest.py.  Cores go to WORKDIR; those of fixtures whose
checks all passed are deleted (HS_KEEP_CORES=1 keeps them, HS_REUSE_CORES=1
reuses them).
"""

import argparse
import concurrent.futures
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hstest  # noqa: E402
from hstest import HsError, hx  # noqa: E402

FIXTURES = [
    "rc_global",
    "rc_interior",
    "rc_stack",
    "rc_regs",
    "rc_tls",
    "rc_pool",
    "rc_leaks",
    "rc_exited",
    "rc_lib",
    "rc_rules",
]

CLASSES = ("reachable", "possible", "leak-root", "indirect")
LEAKED = {"leak-root", "indirect"}
SUMMARY_KEYS = {"reachable": "reachable", "possible": "possible",
                "leak-root": "leak_root", "indirect": "indirect"}
RED_ZONE = 128
JOBS = max(2, min(8, os.cpu_count() or 2))


def desc(a):
    return "%s [%s]" % (a["address"], a["label"])


def take(name):
    """The fixture's gcore Snapshot (no kernel core: not needed here)."""
    return hstest.truth_core(name)


# ---------------------------------------------------------------- gdb


def gdb_answers(snap, queries):
    """Answers of tests/reach_gdb_oracle.py to `queries` on snap's core."""
    if not queries:
        return []
    base = snap.core + ".gdbq"
    qpath, apath = base + ".json", base + ".out.json"
    with open(qpath, "w") as f:
        json.dump(queries, f)
    if os.path.exists(apath):
        os.unlink(apath)
    env = dict(os.environ, RC_GDB_QUERIES=qpath, RC_GDB_OUT=apath)
    try:
        r = hstest.run(["gdb", "-batch", "-nx", "-q", "-x",
                        os.path.join(HERE, "reach_gdb_oracle.py"),
                        snap.binary, snap.core], env=env, timeout=120)
    except FileNotFoundError:
        raise HsError("gdb is not installed")
    if r.timed_out:
        raise HsError("gdb timed out on %s" % snap.core)
    if not os.path.exists(apath):
        raise HsError("gdb answered nothing on %s:\n%s"
                      % (snap.core, (r.out + r.err)[-2000:]))
    return hstest.load_json(apath, "gdb answers")


def tid_of(rec, index):
    for t in rec["threads"]:
        if t["index"] == index:
            return t["tid"]
    return None


def frame_of(frames, addr):
    """The gdb frame whose stack range [its sp, the next frame's sp) holds
    addr; heapsift splits a stack the same way (frame 0 from sp - 128)."""
    for i, f in enumerate(frames):
        lo = f["sp"] - (RED_ZONE if i == 0 else 0)
        hi = frames[i + 1]["sp"] if i + 1 < len(frames) else None
        if lo <= addr and (hi is None or addr < hi):
            return f
    return None


def holder_at(rec, h, frames):
    """The address of the word a holder names, or None when unknown (a
    register; a word relative to the stack pointer without gdb frames)."""
    if "sp_offset" in h:
        fr = frames.get(tid_of(rec, h["thread"]))
        return fr[0]["sp"] + h["sp_offset"] if fr else None
    if h["kind"] == "allocation":
        return hx(h["at"]) + h["offset"]
    return hx(h["at"]) if "at" in h else None


def holder_key(a, h):
    return (a["address"], a["holders"].index(h))


def check_fixture_claims(ck, name, snap):
    """The fixture's claims, checked with gdb.  Returns the gdb frames of
    the threads that hold stack words ({tid: frames, newest first})."""
    rec = snap.record
    ck.case("%s: fixture: selfchecks" % name, list(rec.get("selfcheck", [])))
    ck.check("%s: fixture: writing the record allocated nothing" % name,
             rec.get("mallinfo2") == rec.get("mallinfo2_before_record"),
             "mallinfo2 before %s, after %s" % (rec.get("mallinfo2_before_record"),
                                                rec.get("mallinfo2")))
    addrs = [hx(a["address"]) for a in rec["allocations"]]
    ck.check("%s: fixture: addresses are distinct" % name,
             len(set(addrs)) == len(addrs))

    queries, what = [], []

    def ask(q, a, h, kind):
        queries.append(q)
        what.append((a, h, kind))

    stack_tids = set()
    for a in rec["allocations"]:
        for h in a["holders"]:
            kind = h["kind"]
            tid = tid_of(rec, h["thread"]) if "thread" in h else None
            if kind in ("frame", "stale") or (kind == "dead" and tid is not None):
                stack_tids.add(tid)
            if kind == "register" or (kind == "stale" and "sp_offset" not in h
                                      and "at" not in h):
                ask({"op": "reg", "tid": tid, "reg": h["name"]}, a, h, "value")
                continue
            if "sp_offset" in h:
                ask({"op": "mem_sp", "tid": tid, "offset": h["sp_offset"]},
                    a, h, "value")
                continue
            ask({"op": "mem", "addr": holder_at(rec, h, {})}, a, h, "value")
            if kind == "global":
                ask({"op": "symbol", "addr": hx(h["at"])}, a, h, "symbol")
            elif kind == "tls":
                ask({"op": "tls", "tid": tid, "name": h["name"]}, a, h, "tls")
    for tid in sorted(t for t in stack_tids if t is not None):
        ask({"op": "frames", "tid": tid}, None, tid, "frames")
    try:
        answers = gdb_answers(snap, queries)
    except HsError as e:
        ck.check("%s: fixture: gdb reads the core" % name, False, str(e))
        return {}, {}

    frames, values = {}, {}
    for (a, h, kind), ans in zip(what, answers):
        if kind == "frames":
            ok = bool(ans.get("frames"))
            ck.check("%s: fixture: gdb unwinds thread tid %d" % (name, h), ok,
                     ans.get("error", ""))
            if ok:
                frames[h] = ans["frames"]
    for (a, h, kind), ans in zip(what, answers):
        if kind == "frames":
            continue
        if "error" in ans:
            ck.check("%s: fixture: gdb %s query for %s" % (name, kind, desc(a)),
                     False, "%s: %s" % (h, ans["error"]))
            continue
        if kind == "value":
            lo = hx(a["address"])
            v = ans["value"]
            values[holder_key(a, h)] = v
            ck.check("%s: fixture: %s: its %s holder holds it" % (name, desc(a), h["kind"]),
                     lo <= v < lo + a["usable"],
                     "holder %s holds %#x" % (h, v))
        elif kind == "symbol":
            text = ans["text"]
            ck.check("%s: fixture: %s: the word is in global %s" % (name, desc(a), h["name"]),
                     text.split()[0] == h["name"] if text else False,
                     "gdb: info symbol %s: %r" % (h["at"], text))
        elif kind == "tls":
            ck.check("%s: fixture: %s: word %s is in TLS %s of thread %d"
                     % (name, desc(a), h["at"], h["name"], h["thread"]),
                     ans["address"] <= hx(h["at"]) < ans["address"] + ans["size"],
                     "gdb: &%s = %#x, %d bytes" % (h["name"], ans["address"],
                                                   ans["size"]))
    for a in rec["allocations"]:
        for h in a["holders"]:
            if h["kind"] not in ("frame", "dead", "stale") or "thread" not in h:
                continue  # a dead word of an exited thread: no frames
            fr = frames.get(tid_of(rec, h["thread"]))
            at = holder_at(rec, h, frames)
            if not fr or at is None:
                continue  # reported above
            if h["kind"] == "stale":
                sp = fr[0]["sp"]
                ck.check("%s: fixture: %s: word %#x is in the red zone (sp - %d .. sp)"
                         % (name, desc(a), at, RED_ZONE), sp - RED_ZONE <= at < sp,
                         "sp %#x" % sp)
            elif h["kind"] == "frame":
                f = frame_of(fr, at)
                ck.check("%s: fixture: %s: slot %#x is in a %s frame"
                         % (name, desc(a), at, h["name"]),
                         f is not None and f["function"] == h["name"],
                         "gdb frame: %s" % f)
            else:
                sp = fr[0]["sp"]
                ck.check("%s: fixture: %s: word %#x is dead stack (below sp - %d)"
                         % (name, desc(a), at, RED_ZONE), at < sp - RED_ZONE,
                         "sp %#x" % sp)
    return frames, values


# ---------------------------------------------------------------- heapsift


def entries_by_addr(lst):
    return {hx(e["address"]): e for e in lst.get("allocations", [])}


def check_classes(ck, name, rec, lst, key, mode):
    by = entries_by_addr(lst)
    for a in rec["allocations"]:
        e = by.get(hx(a["address"]))
        want = a[key]
        if e is None:
            ck.check("%s: %s class (%s)" % (name, desc(a), mode), False,
                     "not listed")
            continue
        got = e.get("reach") if e.get("state") == "used" else "state " + str(e.get("state"))
        ck.check("%s: %s class (%s)" % (name, desc(a), mode), got == want,
                 "expected %s, got %s" % (want, got))
        if mode == "default":
            ck.check("%s: %s listed size" % (name, desc(a)),
                     e.get("size") == a["usable"],
                     "record usable %s, listed %s" % (a["usable"], e.get("size")))
        if mode == "default":
            ck.check("%s: %s held via %s" % (name, desc(a), a.get("via")),
                     e.get("via") == a.get("via"), "entry %s" % e)
        if mode == "no-rule":
            ck.check("%s: %s: no via with --no-rule all" % (name, desc(a)),
                     "via" not in e, "entry %s" % e)
        stale = any(h["kind"] == "stale" for h in a["holders"])
        if stale and mode != "conservative-roots":
            ck.check("%s: %s is flagged stale_ref (%s)" % (name, desc(a), mode),
                     e.get("stale_ref") is True, "entry %s" % e)
        if mode == "conservative-roots":
            ck.check("%s: %s: no stale_ref with --conservative-roots" % (name, desc(a)),
                     "stale_ref" not in e, "entry %s" % e)
    recorded = {hx(a["address"]) for a in rec["allocations"]}
    others = ["%s size %s %s (%s)" % (e["address"], e.get("size"), e.get("reach"),
                                      e.get("where"))
              for addr, e in sorted(by.items())
              if addr not in recorded and e.get("reach") in LEAKED]
    ck.case("%s: nothing the fixture did not allocate is leaked (%s)"
              % (name, mode), others)


def check_leaks(ck, name, rec, lk, lst, key, mode):
    ck.check("%s: leaks is not partial (%s)" % (name, mode),
             lk.get("partial") is False,
             "partial %s, warnings %s" % (lk.get("partial"), lk.get("warnings")))
    roots = {}
    for g in lk.get("groups", []):
        for lr in g.get("leak_roots", []):
            roots[hx(lr["address"])] = lr
    by_addr = {hx(a["address"]): a for a in rec["allocations"]}
    for a in rec["allocations"]:
        addr = hx(a["address"])
        if a[key] != "leak-root":
            if addr in roots:
                ck.check("%s: %s is not a leak root (%s)" % (name, desc(a), mode),
                         False, "expected %s, listed as a leak root" % a[key])
            continue
        held = [x for x in rec["allocations"]
                if x[key] == "indirect" and x.get("owner")
                and hx(x["owner"]) == addr]
        want = (len(held), sum(x["usable"] for x in held))
        lr = roots.get(addr)
        got = (lr["held_count"], lr["held_bytes"]) if lr else None
        ck.check("%s: %s leak root holds %d blocks, %d bytes (%s)"
                 % (name, desc(a), want[0], want[1], mode), got == want,
                 "got %s" % ("not a leak root" if got is None else
                             "%d blocks, %d bytes" % got))
    # indirect allocations the fixture charges to a leak root in this mode
    for a in rec["allocations"]:
        if a[key] == "indirect" and a.get("owner"):
            owner = by_addr.get(hx(a["owner"]))
            ck.check("%s: fixture: %s is charged to a leak root (%s)"
                     % (name, desc(a), mode),
                     owner is not None and owner[key] == "leak-root")
    # the summary agrees with list
    counts = {c: [0, 0] for c in CLASSES}
    for e in lst.get("allocations", []):
        if e.get("state") == "used" and e.get("reach") in counts:
            counts[e["reach"]][0] += 1
            counts[e["reach"]][1] += e.get("size", 0)
    summ = lk.get("summary", {})
    bad = []
    for c in CLASSES:
        s = summ.get(SUMMARY_KEYS[c], {})
        if [s.get("count"), s.get("bytes")] != counts[c]:
            bad.append("%s: summary %s/%s, list %s/%s" % (
                c, s.get("count"), s.get("bytes"), counts[c][0], counts[c][1]))
    leaked = summ.get("leaked", {})
    lsum = [counts["leak-root"][0] + counts["indirect"][0],
            counts["leak-root"][1] + counts["indirect"][1]]
    if [leaked.get("count"), leaked.get("bytes")] != lsum:
        bad.append("leaked: summary %s/%s, list %s/%s" % (
            leaked.get("count"), leaked.get("bytes"), lsum[0], lsum[1]))
    nroots = sum(1 for e in lst.get("allocations", []) if e.get("reach") == "leak-root")
    if nroots != len(roots):
        bad.append("%d leak roots in groups, %d in list" % (len(roots), nroots))
    ck.case("%s: leaks summary agrees with list (%s)" % (name, mode), bad)


def root_name_re(h, tid, exe):
    """A regular expression for the root name heapsift must give."""
    t = r"thread \d+ \(tid %d\) " % tid if tid is not None else None
    kind = h["kind"]
    module = h.get("module", exe)
    if kind == "global":
        return r"global %s in %s$" % (re.escape(h["name"]), re.escape(module))
    if kind == "register":
        # a vector register's root is one of its 8-byte lanes: xmm0[0]
        lane = r"\[\d\]" if h["name"][:3] in ("xmm", "ymm", "zmm") else ""
        return t + re.escape(h["name"]) + lane + "$"
    if kind == "tls":
        return t + r"TLS %s in %s$" % (re.escape(h["name"]), re.escape(module))
    if kind == "frame":
        return t + r"frame #(\d+) %s\b" % re.escape(h["name"])
    if kind == "unexplained":
        mapping = h.get("name")
        if mapping is None:
            return r"(anonymous memory|writable mapping of .+) at 0x[0-9a-f]+$"
        if mapping == "":
            return r"anonymous memory at 0x[0-9a-f]+$"
        return r"writable mapping of (.*/)?%s at 0x[0-9a-f]+$" % re.escape(mapping)
    return None


ROOT_KINDS = {"global": "global", "register": "register", "tls": "tls",
              "frame": "stack", "unexplained": "unexplained"}


def check_show(ck, name, snap, a, shown, frames, values, expected_class):
    rec = snap.record
    exe = os.path.basename(snap.binary)
    d = desc(a)
    got = shown.get("reach")
    ck.check("%s: show %s class" % (name, d), got == expected_class,
             "expected %s, got %s" % (expected_class, got))
    ck.check("%s: show %s address" % (name, d),
             hx(shown.get("address", "0x0")) == hx(a["address"]),
             "show says %s" % shown.get("address"))
    pointed = shown.get("pointed_by", [])
    roots = [p for p in pointed if "root" in p]
    allocs = [p for p in pointed if "allocation" in p]
    by_addr = {hx(x["address"]): x for x in rec["allocations"]}
    for h in a["holders"]:
        kind = h["kind"]
        if kind == "allocation":
            want = (hx(h["at"]), h["offset"])
            hits = [p for p in allocs
                    if (hx(p["allocation"]), p.get("offset")) == want]
            parent = by_addr.get(want[0])
            ok = bool(hits)
            detail = "no pointer from %s at offset %d; pointed_by %s" % (
                h["at"], h["offset"], pointed)
            if ok and parent is not None:
                ok = hits[0].get("reach") == parent["expect"]
                detail = "the parent's reach is %s, expected %s" % (
                    hits[0].get("reach"), parent["expect"])
            ck.check("%s: show %s pointed to by %s+%d" % (name, d, h["at"], h["offset"]),
                     ok, detail)
            v = values.get(holder_key(a, h))
            if hits and v is not None:
                want = v - hx(a["address"])
                ck.check("%s: show %s target offset from %s+%d"
                         % (name, d, h["at"], h["offset"]),
                         hits[0].get("target_offset") == want,
                         "show says %s, gdb reads %#x there (+%d)"
                         % (hits[0].get("target_offset"), v, want))
            continue
        tid = tid_of(rec, h["thread"]) if "thread" in h else None
        want_at = holder_at(rec, h, frames)
        if kind == "stale":
            # a root word the live rule rejects: shown, flagged stale
            hits = [p for p in roots if p.get("stale") is True and
                    (want_at is None or hx(p.get("at", "0x0")) == want_at & ~7) and
                    ("at" in p or "sp_offset" in h or
                     re.search(r"\b%s \(dead" % re.escape(h.get("name") or ""), p["root"]))]
            ck.check("%s: show %s: the stale word at %s is shown as stale"
                     % (name, d, "%#x" % want_at if want_at else "?"), bool(hits),
                     "roots in pointed_by: %s" % roots)
            live = [p["root"] for p in roots
                    if want_at is not None and not p.get("stale") and
                    want_at & ~7 <= hx(p.get("at", "0x0")) < want_at + 8]
            ck.case("%s: show %s: the stale word is no live root" % (name, d), live)
            continue
        if kind in ("dead", "unaligned"):
            if want_at is None:
                continue
            # show reports the aligned word a pointer was read from
            bad = [p["root"] for p in roots
                   if want_at & ~7 <= hx(p.get("at", "0x0")) < want_at + 8]
            ck.case("%s: show %s: the %s word at %#x is not a root"
                      % (name, d, kind, want_at), bad)
            continue
        pattern = root_name_re(h, tid, exe)
        hits = []
        for p in roots:
            m = re.match(pattern, p["root"])
            if not m or p.get("kind") != ROOT_KINDS[kind]:
                continue
            if want_at is not None and hx(p.get("at", "0x0")) != want_at:
                continue
            hits.append((p, m))
        label = {"global": "global %s" % h.get("name"),
                 "register": "register %s of thread %s" % (h.get("name"), h.get("thread")),
                 "tls": "TLS %s of thread %s" % (h.get("name"), h.get("thread")),
                 "frame": "a %s frame" % h.get("name"),
                 "unexplained": "unexplained memory"}[kind]
        if want_at is not None:
            label += " at %#x" % want_at
        ck.check("%s: show %s held by %s" % (name, d, label), bool(hits),
                 "pattern %r; roots in pointed_by: %s" % (
                     pattern, [(p["root"], p.get("kind"), p.get("at")) for p in roots]))
        # the value gdb read there says where in the block it points
        v = values.get(holder_key(a, h))
        if hits and v is not None:
            want = v - hx(a["address"])
            offs = sorted({p.get("target_offset") for p, _ in hits})
            ck.check("%s: show %s target offset from %s" % (name, d, label),
                     offs == [want], "show says %s, gdb reads %#x there (+%d)"
                     % (offs, v, want))
        if kind == "frame" and hits:
            fr = frames.get(tid)
            f = frame_of(fr, want_at) if fr and want_at is not None else None
            if f is not None:
                levels = sorted({int(m.group(1)) for _, m in hits})
                ck.check("%s: show %s frame number" % (name, d),
                         levels == [f["level"]],
                         "heapsift says frame #%s, gdb says the slot is in frame "
                         "#%d %s (sp %#x)" % (levels, f["level"], f["function"],
                                              f["sp"]))
    # the definitions, as `show` reports them
    if got in LEAKED:
        bad = [json.dumps(p) for p in pointed
               if ("root" in p and not p.get("stale"))
               or ("root" not in p and p.get("reach") not in LEAKED)]
        ck.case("%s: show %s: a leaked block is pointed to by leaked blocks only"
                  % (name, d), bad)
    if got == "reachable" and shown.get("via"):
        # held past a header: some pointer from a root or a reachable block
        ok = any("root" in p and not p.get("stale") for p in pointed) or \
            any(p.get("reach") == "reachable" for p in allocs)
        ck.check("%s: show %s: a block held via %s has a pointer from a root "
                 "or a reachable block" % (name, d, shown["via"]), ok,
                 "pointed_by %s" % pointed)
    elif got == "reachable":
        ok = any("root" in p and p.get("target_offset") == 0 for p in pointed) or \
            any(p.get("reach") == "reachable" and p.get("target_offset") == 0
                for p in allocs)
        ck.check("%s: show %s: a reachable block has a start pointer from a root "
                 "or a reachable block" % (name, d), ok, "pointed_by %s" % pointed)
    if got == "possible":
        starts = [p for p in pointed if p.get("target_offset") == 0 and
                  ("root" in p or p.get("reach") == "reachable")]
        ck.case("%s: show %s: a possible block has no start pointer from a root "
                  "or a reachable block" % (name, d), [json.dumps(p) for p in starts])


def show_all(snap, addrs):
    def one(addr):
        try:
            return addr, hstest.heapsift_json("show", snap, "%#x" % addr)
        except HsError as e:
            return addr, e
    with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
        return dict(pool.map(one, addrs))


def check_heapsift(ck, name, snap, frames, values):
    rec = snap.record
    modes = [("default", (), "expect"),
             ("no-unexplained", ("--no-unexplained",), "expect_strict"),
             ("conservative-roots", ("--conservative-roots",), "expect_conservative"),
             ("no-rule", ("--no-rule", "all"), "expect_norule")]
    for mode, extra, key in modes:
        try:
            lst = hstest.heapsift_json("list", snap, "--state", "all", *extra)
            lk = hstest.heapsift_json("leaks", snap, *extra)
        except HsError as e:
            ck.check("%s: heapsift list/leaks (%s)" % (name, mode), False, str(e))
            continue
        check_classes(ck, name, rec, lst, key, mode)
        check_leaks(ck, name, rec, lk, lst, key, mode)
    shown = show_all(snap, [hx(a["address"]) for a in rec["allocations"]])
    for a in rec["allocations"]:
        s = shown[hx(a["address"])]
        if isinstance(s, HsError):
            ck.check("%s: show %s" % (name, desc(a)), False, str(s))
            continue
        check_show(ck, name, snap, a, s, frames, values, a["expect"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("fixtures", nargs="*", default=FIXTURES)
    args = ap.parse_args()
    ck = hstest.Checker(quiet=not args.verbose)
    if not hstest.heapsift_available():
        ck.check("heapsift binary", False, "%s not found" % hstest.HEAPSIFT)
        return ck.finish()
    for name in args.fixtures:
        try:
            snap = take(name)
        except HsError as e:
            ck.check("%s: core taken" % name, False, str(e))
            continue
        failed = ck.failed
        frames, values = check_fixture_claims(ck, name, snap)
        check_heapsift(ck, name, snap, frames, values)
        if ck.failed == failed and os.environ.get("HS_KEEP_CORES") != "1":
            hstest.remove_cores(name)
            for suffix in (".gdbq.json", ".gdbq.out.json"):
                if os.path.exists(snap.core + suffix):
                    os.unlink(snap.core + suffix)
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())
