#!/usr/bin/env python3
"""Cross-check of heapsift's leak classes with valgrind memcheck's.

Each reachability fixture (tests/fixtures/rc_*.c) runs twice:
  - natively until it stops; heapsift classifies its allocations from a
    gcore of the stopped process (`list --state all`, `leaks`);
  - under valgrind, where rc_stop() runs memcheck's full leak check at the
    very point where the native run stops (VALGRIND_DO_LEAK_CHECK from the
    same frame, with the same red-zone words), then exits.
Valgrind's allocator puts blocks at other addresses, so blocks are matched
through the fixture's record: every allocation site of a fixture has a
request size of its own, and a memcheck loss record (blocks of one site
and one kind) gives the size as direct bytes / blocks.  Only loss records
whose stack passes through rc_new_at (the fixture's own allocations) are
compared; glibc's own blocks are not.

Kinds: definitely lost = leak-root, indirectly lost = indirect, possibly
lost = possible, still reachable = reachable.  For every site the number of
blocks of each kind must agree, and memcheck's indirect bytes of a
definitely lost record must equal heapsift's held bytes of those leak
roots (sizes are 16k+8, so usable and requested sizes agree).

memcheck runs with its default heuristics (--leak-check-heuristics=all:
new[] cookies, length prefixes, std::string, multiple inheritance), which
heapsift applies too (analyzers/rules.h; rc_rules holds one block by
each).  Principled differences that remain are listed in KNOWN_DIFFERENCES
with the reason; for those the test checks that memcheck gives exactly the
documented answer and heapsift the fixture's (the definitions'), and
prints both.  Where the two tools disagree otherwise, the failure shows
the fixture's expectation too, to tell which side is off.

Files go to WORKDIR/memcheck (cores of fixtures whose checks all passed
are deleted unless HS_KEEP_CORES=1; memcheck's XML stays).

Usage: test_memcheck_crosscheck.py [-v] [FIXTURE ...]
The last line is "N passed, M failed"; exit 77 (skipped) when valgrind or
its client-request header is not available.
"""

import argparse
import collections
import os
import re
import shutil
import sys
import xml.etree.ElementTree as ET

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

# Fixtures memcheck cannot judge like heapsift does, with the reason.
# (None today: registers of a spinning thread are in its guest state, TLS
# and thread stacks are ordinary client memory, the app's mappings are
# scanned like heapsift's unexplained memory.)
SKIP = {}

KIND = {
    "Leak_DefinitelyLost": "leak-root",
    "Leak_IndirectlyLost": "indirect",
    "Leak_PossiblyLost": "possible",
    "Leak_StillReachable": "reachable",
}

# (fixture, label) -> memcheck's answer where it differs, on principle,
# from the definitions heapsift implements (which the fixture's record
# states); heapsift must then give the fixture's answer.
KNOWN_DIFFERENCES = {
    ("rc_rules", "sds: an 8-bit header"): {
        "memcheck": ({"possible": 1}, 0),
        "why": "the only pointer is 3 bytes in, past a redis-style sds "
               "header whose last byte names its type; heapsift's sds rule "
               "takes it for a start, memcheck has no such heuristic.",
    },
    ("rc_rules", "luastate: a Lua thread past its extra space"): {
        "memcheck": ({"possible": 1}, 0),
        "why": "the only pointer is 8 bytes in, past Lua's LUA_EXTRASPACE, "
               "to a lua_State whose header says thread; heapsift's luastate "
               "rule takes it for a start, memcheck has no such heuristic.",
    },
    ("rc_rules", "the Lua thread's stack"): {
        "memcheck": ({"possible": 1}, 0),
        "why": "held by a start pointer from the Lua thread above, which "
               "memcheck calls possible.",
    },
    ("rc_rules", "sds: a 16-bit header"): {
        "memcheck": ({"possible": 1}, 0),
        "why": "the same with a 5-byte header (sdshdr16).",
    },
    ("rc_rules", "learned: a node of an interior-linked list"): {
        "memcheck": ({"possible": 12}, 0),
        "why": "every pointer into the 12 blocks of 88 bytes points 16 "
               "bytes in (an intrusive list).  heapsift learns that "
               "convention from the heap (the learned rule) and calls the "
               "nodes reachable; memcheck has no such heuristic.",
    },
    ("rc_rules", "typed: a struct pyobj after a 16-byte head"): {
        "memcheck": ({"possible": 1}, 0),
        "why": "the only pointer, a global struct pyobj *, points 16 bytes "
               "in, past a collector head, and a whole struct pyobj fits "
               "there: heapsift's typed rule takes it for a start (DWARF "
               "says what the pointer points to), memcheck has no types.",
    },
    ("rc_rules", "typed: its type object, the same head"): {
        "memcheck": ({"possible": 1}, 0),
        "why": "the same, through the typed member pyobj.type of the "
               "object above.",
    },
    ("rc_rules", "typed: the object's name (held by the typed object)"): {
        "memcheck": ({"possible": 1}, 0),
        "why": "held by a start pointer from the first typed block, which "
               "memcheck calls possible.",
    },
    ("rc_regs", "only in the main thread's dead r9"): {
        "memcheck": ({"reachable": 1}, 0),
        "why": "memcheck counts every general register of every thread.  "
               "At the native stop the thread is in kill(2), which takes two "
               "arguments (rdi, rsi): r9 is a caller-saved register left from "
               "earlier code, dead by heapsift's live rule (docs/roots.md).  "
               "heapsift calls the block a leak root flagged stale_ref; "
               "--conservative-roots agrees with memcheck.",
    },
    ("rc_regs", "held by xmm0"): {
        "memcheck": ({"leak-root": 1}, 0),
        "why": "the only copy is in xmm0 of a thread interrupted while it "
               "spins.  memcheck's leak check reads general registers only; "
               "heapsift reads each 8-byte lane of the vector registers "
               "(NT_FPREGSET, NT_X86_XSTATE), as LeakSanitizer does with the "
               "registers of a suspended thread.",
    },
    ("rc_stack", "red zone, 120 bytes below sp"): {
        "memcheck": ({"reachable": 1}, 0),
        "why": "the only pointer is 120 bytes below the stack pointer.  "
               "memcheck checks from a client request inside the frame and "
               "scans the 128-byte red zone as accessible stack.  The native "
               "run stops in a system call, where heapsift's live rule "
               "(docs/roots.md) counts the red zone as dead: what is there "
               "belongs to calls that have returned.  heapsift calls it a "
               "leak root flagged stale_ref; --conservative-roots agrees "
               "with memcheck.",
    },
    ("rc_leaks", "entered cycle, low member"): {
        "memcheck": ({"leak-root": 1}, 376),
        "why": "memcheck makes clique leaders greedily in address order: the "
               "low member A of the cycle A <-> B comes first, becomes a "
               "leader and takes B; when C (higher) is reached, B is already "
               "taken and C's flood stops there, so A stays definitely lost, "
               "holding B.  By the definition heapsift implements, A is "
               "pointed to by the leaked B, so it is not a leak root; C, "
               "which nothing points to, is the only one, holding A and B.",
    },
    ("rc_leaks", "enters the cycle"): {
        "memcheck": ({"leak-root": 1}, 0),
        "why": "the other half of the same difference: memcheck charges "
               "nothing to C, heapsift charges A and B (360 + 376 bytes).",
    },
    ("rc_interior", "pointer past the request, inside the usable size"): {
        "memcheck": ({"leak-root": 1}, 0),
        "why": "the only pointer is 180 bytes into a malloc(180) whose "
               "usable size is 184.  memcheck knows the request and sees a "
               "pointer past the block; a core does not record requests, so "
               "for heapsift the block is its usable size and the pointer "
               "an interior one.",
    },
    ("rc_exited", "held by an exited thread's TLS"): {
        "memcheck": ({"reachable": 1}, 0),
        "why": "the thread exited and was joined; its static TLS stays "
               "mapped in glibc's stack cache and memcheck still scans it as "
               "client memory.  No thread can read that TLS again (a new "
               "thread that gets the cached stack has its TLS initialized "
               "afresh), so the block is leaked.",
    },
}

SKIP_EXIT = 77
VALGRIND_TIMEOUT = float(os.environ.get("HS_VALGRIND_TIMEOUT", "300"))
TEXT_RE = re.compile(r"^([\d,]+)(?: \(([\d,]+) direct, ([\d,]+) indirect\))? "
                     r"bytes in ([\d,]+) blocks")


def num(s):
    return int(s.replace(",", ""))


# ---------------------------------------------------------------- memcheck


def run_valgrind(name, workdir):
    """Runs fixture `name` under memcheck; returns (record, xml path)."""
    binary = hstest.fixture_path(name)
    vgdir = os.path.join(workdir, name + ".vg")
    os.makedirs(vgdir, exist_ok=True)
    xml = os.path.join(workdir, name + ".memcheck.xml")
    rec_path = os.path.join(workdir, name + ".vg.record.json")
    log = os.path.join(workdir, name + ".vg.log")
    for stale in (xml, rec_path):
        if os.path.exists(stale):
            os.unlink(stale)
    env = dict(os.environ)
    env["HS_RECORD"] = rec_path
    for var in ("LD_PRELOAD", "GLIBC_TUNABLES", "MALLOC_CHECK_",
                "MALLOC_PERTURB_", "VALGRIND_OPTS"):
        env.pop(var, None)
    # The client's memory from 4 GiB up.  memcheck scans the dynamic
    # linker's data, where rtld's relocate_time holds a cycle count: under
    # valgrind, relocation takes tens of millions of cycles, the range of
    # valgrind's default client heap (0x4a00000 is 77.6 M).  In about one
    # run of 300, that count fell inside rc_leaks' 400 KiB block, and
    # memcheck called it possible (who_points_at: "0 bytes inside data
    # symbol relocate_time").  No count below 2^32 can point into a block
    # above it.
    cmd = ["valgrind", "--tool=memcheck", "--aspace-minaddr=0x100000000",
           "--leak-check=full",
           "--show-leak-kinds=all", "--leak-check-heuristics=all",
           "--num-callers=50", "--error-limit=no", "--xml=yes",
           "--xml-file=" + xml, binary]
    r = hstest.run(cmd, env=env, cwd=vgdir, timeout=VALGRIND_TIMEOUT)
    with open(log, "w") as f:
        f.write(r.out + r.err)
    if r.timed_out:
        raise HsError("valgrind on %s timed out" % name)
    if r.rc != 0 or not os.path.exists(xml):
        raise HsError("valgrind on %s exited %d:\n%s" % (name, r.rc, (r.out + r.err)[-2000:]))
    rec = hstest.load_json(rec_path, "record of %s under valgrind" % name)
    return rec, xml


def first_leak_check(xml):
    """Loss records of the fixture's own allocations from the first leak
    check in the file (the one rc_stop asked for; the one at exit comes
    after the FINISHED status).  Each: {kind, direct, indirect, blocks}."""
    try:
        root = ET.parse(xml).getroot()
    except ET.ParseError as e:
        raise HsError("%s is not valid XML: %s" % (xml, e))
    out = []
    for el in root:
        if el.tag == "status" and el.findtext("state") == "FINISHED":
            break
        if el.tag != "error":
            continue
        kind = KIND.get(el.findtext("kind"))
        if kind is None:
            continue
        fns = [f.findtext("fn") for f in el.iter("frame")]
        if "rc_new_at" not in fns:
            continue
        text = el.findtext("xwhat/text") or ""
        m = TEXT_RE.match(text)
        if not m:
            raise HsError("cannot read loss record %r" % text)
        total, direct, indirect, blocks = m.groups()
        direct = num(direct) if direct else num(total)
        out.append({"kind": kind, "direct": direct,
                    "indirect": num(indirect) if indirect else 0,
                    "blocks": num(blocks), "text": text})
    return out


# ---------------------------------------------------------------- compare


def by_site(rec):
    """request size -> label, for a record whose sizes are per site."""
    sites = {}
    for a in rec["allocations"]:
        sites.setdefault(a["request"], set()).add(a["label"])
    return sites


def heapsift_side(snap):
    """request size -> (Counter of classes, held bytes of leak roots)."""
    lst = hstest.heapsift_json("list", snap, "--state", "all")
    lk = hstest.heapsift_json("leaks", snap)
    entries = {hx(e["address"]): e for e in lst.get("allocations", [])}
    held = {}
    for g in lk.get("groups", []):
        for lr in g.get("leak_roots", []):
            held[hx(lr["address"])] = lr["held_bytes"]
    side = {}
    for a in snap.record["allocations"]:
        addr = hx(a["address"])
        e = entries.get(addr)
        cls = e.get("reach") if e else "not listed"
        counts, hb = side.get(a["request"], (collections.Counter(), 0))
        counts[cls] += 1
        side[a["request"]] = (counts, hb + held.get(addr, 0))
    return side


def memcheck_side(records, sites):
    """request size -> (Counter of kinds, indirect bytes), and problems."""
    side, problems = {}, []
    for r in records:
        if r["blocks"] <= 0 or r["direct"] % r["blocks"]:
            problems.append("loss record mixes sizes: %s" % r["text"])
            continue
        size = r["direct"] // r["blocks"]
        if size not in sites:
            problems.append("loss record of a size the fixture did not "
                            "allocate: %s" % r["text"])
            continue
        counts, ib = side.get(size, (collections.Counter(), 0))
        counts[r["kind"]] += r["blocks"]
        side[size] = (counts, ib + r["indirect"])
    return side, problems


def fmt(counts, held):
    parts = ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items()))
    return "%s (held/indirect bytes %d)" % (parts or "nothing", held)


def fixture_side(rec):
    """request size -> (Counter of expected classes, held bytes the fixture
    charges to the leak roots of that size)."""
    by_addr = {hx(a["address"]): a for a in rec["allocations"]}
    side = {}
    for a in rec["allocations"]:
        counts, hb = side.get(a["request"], (collections.Counter(), 0))
        counts[a["expect"]] += 1
        side[a["request"]] = (counts, hb)
    for a in rec["allocations"]:
        if a["expect"] == "indirect" and a.get("owner"):
            root = by_addr.get(hx(a["owner"]))
            if root is not None:
                counts, hb = side[root["request"]]
                side[root["request"]] = (counts, hb + a["usable"])
    return side


def compare(ck, name, snap, vg_rec, records, verbose):
    rec = snap.record
    ck.case("%s: fixture: selfchecks under valgrind" % name,
              list(vg_rec.get("selfcheck", [])))
    ck.check("%s: fixture: ran under valgrind" % name,
             vg_rec.get("valgrind") is True,
             "the record says it did not see valgrind: was it built "
             "without <valgrind/memcheck.h>?")
    native = sorted((a["label"], a["request"]) for a in rec["allocations"])
    under = sorted((a["label"], a["request"]) for a in vg_rec["allocations"])
    ck.check("%s: fixture: the same allocations natively and under valgrind"
             % name, native == under,
             "native %s\nvalgrind %s" % (native, under))
    sites = by_site(rec)
    ck.case("%s: fixture: one label per request size" % name,
              ["size %d: %s" % (s, sorted(l)) for s, l in sorted(sites.items())
               if len(l) > 1])
    fx = fixture_side(rec)
    try:
        hs = heapsift_side(snap)
    except HsError as e:
        ck.check("%s: heapsift list/leaks" % name, False, str(e))
        return
    mc, problems = memcheck_side(records, sites)
    ck.case("%s: memcheck loss records map to the fixture's sites" % name,
              problems)
    empty = (collections.Counter(), 0)
    for size in sorted(sites):
        label = sorted(sites[size])[0]
        h = hs.get(size, empty)
        m = mc.get(size, empty)
        f = fx.get(size, empty)
        what = "%s: [%s] (%d bytes)" % (name, label, size)
        detail = "memcheck %s\nheapsift %s\nfixture  %s" % (fmt(*m), fmt(*h), fmt(*f))
        known = KNOWN_DIFFERENCES.get((name, label))
        if known:
            doc = (collections.Counter(known["memcheck"][0]), known["memcheck"][1])
            ok_m = m == doc
            ok_h = h == f
            ck.check("%s: memcheck differs as documented" % what, ok_m,
                     detail + "\ndocumented memcheck answer: %s" % fmt(*doc))
            ck.check("%s: heapsift gives the fixture's answer" % what, ok_h, detail)
            if ok_m and ok_h:
                print("known difference %s: memcheck %s, heapsift %s\n    %s"
                      % (what, fmt(*m), fmt(*h), known["why"]))
            continue
        ck.check("%s: same kinds" % what, m[0] == h[0], detail)
        if "leak-root" in m[0]:
            ck.check("%s: memcheck's indirect bytes = heapsift's held bytes" % what,
                     m[1] == h[1], detail)
        if verbose:
            print("     %s: memcheck %s, heapsift %s" % (what, fmt(*m), fmt(*h)))


def memcheck_usable():
    if shutil.which("valgrind") is None:
        return "valgrind is not installed"
    for d in ("/usr/include", "/usr/local/include"):
        if os.path.exists(os.path.join(d, "valgrind", "memcheck.h")):
            return None
    return "<valgrind/memcheck.h> not found: the fixtures cannot ask for a leak check"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("fixtures", nargs="*", default=FIXTURES)
    args = ap.parse_args()
    why = memcheck_usable()
    if why:
        print("skip: %s" % why)
        return SKIP_EXIT
    ck = hstest.Checker(quiet=not args.verbose)
    if not hstest.heapsift_available():
        ck.check("heapsift binary", False, "%s not found" % hstest.HEAPSIFT)
        return ck.finish()
    # own directory: ctest may run test_reach.py at the same time
    workdir = os.path.join(hstest.WORKDIR, "memcheck")
    os.makedirs(workdir, exist_ok=True)
    for name in args.fixtures:
        if name in SKIP:
            print("skip %s: %s" % (name, SKIP[name]))
            continue
        try:
            snap = hstest.truth_core(name, workdir=workdir)
            vg_rec, xml = run_valgrind(name, workdir)
            records = first_leak_check(xml)
        except HsError as e:
            ck.check("%s: native core and memcheck run" % name, False, str(e))
            continue
        failed = ck.failed
        compare(ck, name, snap, vg_rec, records, args.verbose)
        if ck.failed == failed and os.environ.get("HS_KEEP_CORES") != "1":
            hstest.remove_cores(name, workdir)
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())
