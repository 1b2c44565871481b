#!/usr/bin/env python3
"""Tables of how heapsift's phases grow with the heap, from the figures
scripts/bench-scale.sh collected (scale.tsv: one row per size and command,
with heapsift's --stats lines).  Prints, per command, the phase times at
each size (with the peak of the anonymous memory when a sampled run
gave it), then the time per allocation, then the growth of the time per
allocation from the smallest size beside log(n) / log(n0), what an
O(n log n) phase would show (an O(n) phase stays at 1.00).  With the
reference's figures beside it (ref.tsv: tests/fixtures/perf_ref.c N, the
cost of a read at random over a table of N 4-byte entries, chased and
gathered), prints those too, and how much they grew over the same sizes
in the growth table's last two columns.  Then, from --stats' work line,
what the graph's scan, the mark, the dominators and the types did per
allocation (words scanned; edges read, searched and filed, the
semi-dominators' steps, the steps up the dominator chains; typed pointers
followed, the inference's checks) at each size: counts, not times, so the machine's caches do not enter
them; an O(n) pass keeps its count per allocation as the heap grows.
Exits 1 when the file has no usable row."""
import csv
import math
import os
import re
import sys

PHASES = ["heap", "graph", "mark", "dominators", "types", "total"]
# --stats' work line: (key, its pattern, the column's name)
WORK = [("mark_read", r"mark ([0-9]+) edges read", "mark: edges read"),
        ("searched", r"([0-9]+) edges searched", "dominators: edges searched"),
        ("filed", r"([0-9]+) predecessors filed", "predecessors filed"),
        ("semi", r"([0-9]+) semi-dominator steps", "semi-dominator steps"),
        ("nca", r"([0-9]+) NCA steps", "NCA steps"),
        ("followed", r"([0-9]+) pointers followed", "types: pointers followed"),
        ("checks", r"([0-9]+) inference checks", "inference checks")]


def parse(stats):
    """The figures in heapsift's --stats lines (joined by '|')."""
    out = {}
    for p in PHASES + ["open", "modules", "roots"]:
        m = re.search(r"\b%s ([0-9.]+)s" % p, stats)
        if m:
            out[p] = float(m.group(1))
    for key, pat in (("allocations", r"([0-9]+) allocations"),
                     ("edges", r"([0-9]+) pointer edges"),
                     ("words", r"([0-9]+) words scanned"),
                     ("peak_kib", r"peak RSS ([0-9]+) KiB"),
                     ("anon_kib", r"anonymous ([0-9]+) KiB"),
                     ("file_kib", r"file-backed \(the mapped core and libraries\) ([0-9]+) KiB")):
        m = re.search(pat, stats)
        if m:
            out[key] = int(m.group(1))
    for key, pat, _ in WORK:
        m = re.search(pat, stats)
        if m:
            out[key] = int(m.group(1))
    return out


def read_ref(path):
    """perf_ref's figures by size (the N it was given), from ref.tsv beside
    scale.tsv; {} when there is none."""
    ref = {}
    try:
        with open(os.path.join(os.path.dirname(path), "ref.tsv"), newline="") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                try:
                    ref[int(r["n"])] = (float(r["chase_ns"]), float(r["gather_ns"]))
                except (KeyError, TypeError, ValueError):
                    continue
    except OSError:
        pass
    return ref


def main(path):
    ref = read_ref(path)
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            s = parse(r["stats"])
            if not s.get("allocations"):
                continue
            s.update(n=int(r["n"]), wall=float(r["wall_s"]),
                     user=float(r["user_s"]), core=int(r["core_bytes"]))
            # (sampled in a run of its own; absent from older files)
            if (r.get("peak_anon_kib") or "").isdigit():
                s["peak_anon_kib"] = int(r["peak_anon_kib"])
            rows.setdefault(r["command"], []).append(s)
    if not rows:
        print("scale_table: no figures in %s" % path, file=sys.stderr)
        return 1
    if ref:
        print("\nreference: nanoseconds a read at random over a table of 4 bytes "
              "per allocation (perf_ref N)")
        print("| N | chase | gather |")
        print("|---|---|---|")
        for n in sorted(ref):
            print("| %d | %.2f | %.2f |" % (n, ref[n][0], ref[n][1]))
    for cmd, rs in rows.items():
        rs.sort(key=lambda s: s["allocations"])
        print("\n%s: seconds per phase (--stats), the run's user time and memory" % cmd)
        print("| allocations | core MB | edges | %s | wall | user | peak anonymous, B/alloc "
              "| peak RSS - file-backed at the end, B/alloc |" % " | ".join(PHASES))
        print("|---" * (len(PHASES) + 7) + "|")
        for s in rs:
            beyond = (s.get("peak_kib", 0) - s.get("file_kib", 0)) * 1024 / s["allocations"]
            anon = ("%.1f" % (s["peak_anon_kib"] * 1024 / s["allocations"])
                    if "peak_anon_kib" in s else "-")
            print("| %d | %d | %d | %s | %.2f | %.2f | %s | %.1f |" % (
                s["allocations"], s["core"] // 1000000, s.get("edges", 0),
                " | ".join("%.3f" % s.get(p, 0) for p in PHASES),
                s["wall"], s["user"], anon, beyond))
        print("\n%s: nanoseconds per allocation" % cmd)
        print("| allocations | %s | user |" % " | ".join(PHASES))
        print("|---" * (len(PHASES) + 2) + "|")
        for s in rs:
            k = 1e9 / s["allocations"]
            print("| %d | %s | %.0f |" % (s["allocations"], " | ".join(
                "%.0f" % (s.get(p, 0) * k) for p in PHASES), s["user"] * k))
        if len(rs) < 2:
            continue
        base = rs[0]
        print("\n%s: time per allocation relative to %d allocations "
              "(O(n): 1.00; O(n log n): the log ratio)" % (cmd, base["allocations"]))
        extra = " | chase | gather" if ref else ""
        print("| allocations | log ratio | %s | user%s |" % (" | ".join(PHASES), extra))
        print("|---" * (len(PHASES) + 3 + (2 if ref else 0)) + "|")
        for s in rs[1:]:
            lr = math.log(s["allocations"]) / math.log(base["allocations"])
            cells = []
            for p in PHASES + ["user"]:
                b = base.get(p, 0) / base["allocations"]
                x = s.get(p, 0) / s["allocations"]
                cells.append("%.2f" % (x / b) if b > 0 else "-")
            for k in range(2 if ref else 0):
                b, x = ref.get(base["n"]), ref.get(s["n"])
                cells.append("%.2f" % (x[k] / b[k]) if b and x and b[k] > 0 else "-")
            print("| %d | %.2f | %s |" % (s["allocations"], lr, " | ".join(cells)))
    for cmd, rs in rows.items():
        work = [w for w in WORK if any(w[0] in s for s in rs)]
        if not work:
            continue
        print("\n%s: work per allocation (--stats' counts; O(n): the same at "
              "every size)" % cmd)
        print("| allocations | graph: words scanned | edges | %s |" % " | ".join(
            w[2] for w in work))
        print("|---" * (len(work) + 3) + "|")
        for s in rs:
            a = s["allocations"]
            print("| %d | %.3f | %.3f | %s |" % (a, s.get("words", 0) / a, s.get("edges", 0) / a, " | ".join(
                "%.3f" % (s[w[0]] / a) if w[0] in s else "-" for w in work)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: scale_table.py SCALE.TSV", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
