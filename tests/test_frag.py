#!/usr/bin/env python3
"""heapsift frag against the fragment fixture's own record.

Free bytes and counts by where they sit must match mallinfo2 (fordblks =
top + bins + fastbins, ordblks = bin chunks + one top, smblks/fsmblks =
fastbins), the thread caches and the largest free chunk the fixture's
arithmetic (200-byte blocks are 208-byte chunks, 40-byte ones 48), the
histogram the freed chunks; the verdict says fragmentation; with an 8 MiB
pool outside malloc, the footprint shows it and malloc's share drops.
Prints "N passed, M failed" last.
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "frag")
R = hstest.Checker()


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    binary = os.path.join(hstest.FIXTURES, "fragment")
    for case, args in (("plain", []), ("pool", ["pool"])):
        snap = hstest.take_core(binary, WORK, case, args=args)
        core = snap.core
        rec = json.load(open(snap.record_path))
        r = hstest.run([HS, "frag", core, "--format", "json"], timeout=300)
        if r.rc != 0:
            R.case("%s: frag" % case, ["exit %d: %s" % (r.rc, r.err)])
            continue
        d = json.loads(r.out)
        h = d["heap"]
        f = h["free"]
        t = rec["tcache_per_size"]
        problems = []

        def eq(what, got, want):
            if got != want:
                problems.append("%s: %s, expected %s" % (what, got, want))

        eq("fastbin bytes (fsmblks)", f["fastbins"]["bytes"], rec["fsmblks"])
        eq("fastbin chunks (smblks)", f["fastbins"]["count"], rec["smblks"])
        eq("fastbin chunks (arithmetic)", f["fastbins"]["count"], rec["small_freed"] - t)
        eq("bins + top chunks (ordblks)",
           f["small_bins"]["count"] + f["large_bins"]["count"] + f["top"]["count"], rec["ordblks"])
        eq("free bytes without tcache (fordblks)",
           f["fastbins"]["bytes"] + f["small_bins"]["bytes"] + f["large_bins"]["bytes"] +
           f["top"]["bytes"], rec["fordblks"])
        eq("top (keepcost)", h["top"], rec["keepcost"])
        eq("system (arena)", h["system"], rec["arena"])
        eq("tcache chunks", f["tcache"]["count"], 2 * t)
        eq("tcache bytes", f["tcache"]["bytes"], t * (rec["big_chunk"] + rec["small_chunk"]))
        eq("small-bin chunks", f["small_bins"]["count"], rec["big_freed"] - t)
        eq("largest free chunk", h["largest_free"], rec["big_chunk"])
        hist = {b["max_size"]: b for b in h["histogram"]}
        eq("histogram up to 256 B", hist.get(256, {}).get("count"), rec["big_freed"])
        eq("histogram up to 64 B", hist.get(64, {}).get("count"), rec["small_freed"])
        freeb = sum(v["bytes"] for k, v in f.items() if k != "top")
        want_frag = round(1000 * (1 - rec["big_chunk"] / freeb))
        eq("external fragmentation (permille)", h["external_fragmentation_permille"], want_frag)
        if "fragmentation" not in d["verdict"]:
            problems.append("verdict: %r" % d["verdict"])
        R.case("%s: free memory by where it sits, exact; the verdict says fragmentation" % case, problems)
        problems = []
        fp = {x["kind"]: x for x in d["footprint"]}
        if case == "pool":
            if fp["other_anonymous"]["in_use"] < rec["pool"]:
                problems.append("other anonymous in use %d < the pool's %d" %
                                (fp["other_anonymous"]["in_use"], rec["pool"]))
            if d["malloc_share_permille"] >= 500:
                problems.append("malloc share %d permille with an 8 MiB pool outside it" %
                                d["malloc_share_permille"])
        else:
            if d["malloc_share_permille"] < 500:
                problems.append("malloc share %d permille without a pool" % d["malloc_share_permille"])
        if fp["malloc_arenas"]["in_use"] != h["system"]:
            problems.append("arenas in use %d, system bytes %d" % (fp["malloc_arenas"]["in_use"], h["system"]))
        R.case("%s: the footprint shows what malloc explains" % case, problems)
        r = hstest.run([HS, "frag", core], timeout=300)
        R.case("%s: text output starts with the verdict" % case,
               [] if r.rc == 0 and r.out.splitlines()[0] == d["verdict"] else ["%r" % r.out[:200]])
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
