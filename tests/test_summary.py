#!/usr/bin/env python3
"""heapsift summary, and heapdiff over summaries, cores, and both mixed.

The phases fixture (tests/fixtures/phases.c) runs five phases and stops
after each: an unbounded cache (growing), a bounded LRU (plateau), churn
(stable) and a leak (growing), and it records the address of every live
block of each kind.  Its cache and LRU entries hold a planted secret
string.  One core per phase, one summary per core.  Checks:

  - each summary is a heapsift-summary of version 1, smaller than 1 MB,
    and holds no byte of the secret, which the core does hold;
  - heapdiff over the five summaries, and over lists mixing cores and
    summaries in any order, gives per type the bytes series the records
    give (count x usable size), and the same series, slopes, deltas and
    trends per type and per root, and the same leaked series and trend,
    as heapdiff over the five cores; it says it compared by type totals,
    and which snapshot is a summary;
  - a summary of another program is refused as a core of one is; one
    whose types list was cut is compared, with a warning;
  - bad summaries, each one line on stderr and exit status 1: another
    version, cut short, JSON that is no summary, fields of the wrong type,
    a negative count; and `summary -o` into a missing directory or onto a
    directory leaves nothing behind.

Standard library only; prints "N passed, M failed" last.
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
HEAPDIFF = os.path.join(os.path.dirname(HS), "heapdiff")
WORK = os.path.join(hstest.WORKDIR, "summary")
R = hstest.Checker()
PHASES = 5
SECRET = b"heapsift-secret-Kq7Zr2"     # tests/fixtures/phases.c
USABLE = hstest.PHASES_USABLE
LABEL = hstest.PHASES_LABEL
TREND = {"cache_entry": "growing", "lru_entry": "plateau", "churn": "stable",
         "leak_rec": "growing"}


def take_cores():
    return hstest.phases_cores(WORK, PHASES)


def diff(snaps):
    r = hstest.run([HEAPDIFF] + list(snaps) + ["--format", "json"], timeout=300)
    if r.rc != 0:
        return None, "exit %s: %s" % (r.rc, r.err.strip())
    return json.loads(r.out), None


def compare(name, got, want):
    """Per type, per root and leaks of got (over summaries, or mixed)
    against want (over cores): the same series, slopes, deltas, trends."""
    problems = []
    if got["compared_by"] != "type_totals":
        problems.append("compared_by %r" % got["compared_by"])
    gt = {t["type"]: t for t in got["types"]}
    wt = {t["type"]: t for t in want["types"]}
    for label, w in wt.items():
        g = gt.get(label)
        if g is None:
            # hidden by totals only when nothing in its totals moved
            if len(set(w["bytes"])) != 1 or w["retained_delta"] or w["delta_count"]:
                problems.append("type %s: missing" % label)
            continue
        for k in ("bytes", "slope", "trend", "delta_count", "delta_bytes", "retained_delta"):
            if g[k] != w[k]:
                problems.append("type %s: %s %r, over cores %r" % (label, k, g[k], w[k]))
        for k in ("new_count", "new_bytes", "deleted_count", "deleted_bytes"):
            if g[k] is not None:
                problems.append("type %s: %s %r (unknown by totals)" % (label, k, g[k]))
        if "new_bytes_held_by" in g:
            problems.append("type %s: new bytes held by %r (unknown by totals)"
                            % (label, g["new_bytes_held_by"]))
    for label in set(gt) - set(wt):
        problems.append("type %s: not over cores" % label)
    groots = {r["name"]: r for r in got["roots"]}
    wroots = {r["name"]: r for r in want["roots"]}
    if set(groots) != set(wroots):
        problems.append("roots %s, over cores %s" % (sorted(groots), sorted(wroots)))
    for n, w in wroots.items():
        g = groots.get(n, {})
        for k in ("kind", "retained", "slope", "trend", "retained_delta"):
            if g.get(k) != w[k]:
                problems.append("root %s: %s %r, over cores %r" % (n, k, g.get(k), w[k]))
    for k in ("leaked_bytes", "slope", "trend", "leaked_delta_count", "leaked_delta_bytes"):
        if got["leaks"][k] != want["leaks"][k]:
            problems.append("leaks: %s %r, over cores %r" % (k, got["leaks"][k], want["leaks"][k]))
    for k in ("used_delta_count", "used_delta_bytes"):
        if got[k] != want[k]:
            problems.append("%s %r, over cores %r" % (k, got[k], want[k]))
    R.case("%s: the same series, slopes, deltas and trends as over the cores" % name, problems)


def truth(name, d, recs):
    """Per type, the bytes series the fixture's records give, and the
    trend it was built to show."""
    rows = {t["type"]: t for t in d["types"]}
    problems = []
    for kind, label in LABEL.items():
        series = [len(r["addresses"][kind]) * USABLE[kind] for r in recs]
        row = rows.get(label)
        if row is None:
            if len(set(series)) != 1:
                problems.append("no row %s" % label)
            continue
        if row["bytes"] != series:
            problems.append("%s: bytes %s, the records %s" % (label, row["bytes"], series))
        if row["trend"] != TREND[kind]:
            problems.append("%s: trend %s, expected %s" % (label, row["trend"], TREND[kind]))
    roots = {r["name"]: r for r in d["roots"]}
    g = roots.get("global g_cache in phases", {})
    want = [len(r["addresses"]["cache_entry"]) * USABLE["cache_entry"] for r in recs]
    if g.get("retained") != want or g.get("trend") != "growing":
        problems.append("g_cache: %s, expected retained %s, growing" % (g, want))
    leaked = [len(r["addresses"]["leak_rec"]) * USABLE["leak_rec"] for r in recs]
    if d["leaks"]["leaked_bytes"] != leaked or d["leaks"]["trend"] != "growing":
        problems.append("leaks: %s, expected %s, growing" % (d["leaks"], leaked))
    R.case("%s: the series and trends the fixture's records give" % name, problems)


def bad_inputs(cores, summaries):
    """Each bad summary: exit 1, one line on stderr saying what is wrong."""
    good = json.load(open(summaries[1]))
    cases = []

    def write(name, text):
        path = os.path.join(WORK, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    v2 = dict(good, version=2)
    cases.append(("another version", write("v2.json", json.dumps(v2)),
                  "of version 2; this heapsift reads version 1"))
    text = open(summaries[1]).read()
    cases.append(("cut short (invalid JSON)", write("cut.json", text[:len(text) // 2]),
                  "invalid JSON"))
    info = hstest.run([HS, "info", cores[0], "--format", "json"], timeout=300)
    cases.append(("JSON that is no summary (info's)", write("info.json", info.out),
                  "not a heapsift summary"))
    cases.append(("a JSON array", write("array.json", "[1, 2, 3]\n"), "not a heapsift summary"))
    wrong = json.loads(text)
    wrong["types"][0]["bytes"] = str(wrong["types"][0]["bytes"])
    cases.append(("a type's bytes as a string", write("type.json", json.dumps(wrong)),
                  "types[0].bytes is not an integer"))
    wrong = json.loads(text)
    wrong["roots"] = {"name": "x"}
    cases.append(("roots an object", write("roots.json", json.dumps(wrong)),
                  "roots is not an array"))
    wrong = json.loads(text)
    wrong["roots"][0]["name"] = 7
    cases.append(("a root's name a number", write("rootname.json", json.dumps(wrong)),
                  "roots[0].name is not a string"))
    wrong = json.loads(text)
    wrong["totals"]["leaked"]["count"] = -1
    cases.append(("a negative count", write("neg.json", json.dumps(wrong)),
                  "totals.leaked.count is not an integer"))
    wrong = json.loads(text)
    del wrong["types"][0]["label"]
    cases.append(("a type without its label", write("nolabel.json", json.dumps(wrong)),
                  "types[0].label is missing"))
    wrong = json.loads(text)
    wrong["version"] = "1"
    cases.append(("the version a string", write("vstr.json", json.dumps(wrong)),
                  "version is not an integer"))
    for what, path, expect in cases:
        for order in ([cores[0], path], [path, summaries[0]]):
            r = hstest.run([HEAPDIFF] + order, timeout=300)
            lines = [ln for ln in r.err.splitlines() if ln.strip()]
            problems = []
            if r.rc != 1:
                problems.append("exit %s (expected 1)" % r.rc)
            if len(lines) != 1 or not lines[0].startswith("heapsift: %s: " % path) or \
                    expect not in lines[0]:
                problems.append("stderr %r, expected one line naming the file and %r"
                                % (r.err, expect))
            R.case("bad summary, %s (%s): one line, exit 1"
                   % (what, "second" if order[0] == cores[0] else "first"), problems)


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    cores, recs = take_cores()
    summaries = []
    problems = []
    for k, core in enumerate(cores):
        out = os.path.join(WORK, "p%d.summary.json" % k)
        r = hstest.run([HS, "summary", core, "-o", out], timeout=300)
        if r.rc != 0 or not os.path.exists(out):
            problems.append("summary of %s: %s" % (core, r.describe()))
            continue
        summaries.append(out)
    R.case("summary of each of the %d cores" % PHASES, problems)
    if len(summaries) != PHASES:
        return R.finish()

    problems = []
    sizes = []
    for core, s in zip(cores, summaries):
        with open(core, "rb") as f:
            if SECRET not in f.read():
                problems.append("%s does not hold the secret: the check below proves nothing" % core)
        with open(s, "rb") as f:
            data = f.read()
        sizes.append(len(data))
        if len(data) >= 1000000:
            problems.append("%s: %d bytes" % (s, len(data)))
        if SECRET in data or SECRET[:16] in data:
            problems.append("%s holds the secret" % s)
        doc = json.loads(data)
        if doc.get("format") != "heapsift-summary" or doc.get("version") != 1:
            problems.append("%s: format %r version %r" % (s, doc.get("format"), doc.get("version")))
    R.case("each summary is under 1 MB (%s bytes) and holds no byte of the secret the core holds"
           % sizes, problems)

    over_cores, err = diff(cores)
    if err:
        R.case("heapdiff over the cores", [err])
        return R.finish()
    R.case("heapdiff over the cores compares blocks",
           [] if over_cores["compared_by"] == "blocks" else [over_cores["compared_by"]])
    truth("over the cores", over_cores, recs)
    mixes = {
        "the five summaries": summaries,
        "cores and summaries alternating": [cores[0], summaries[1], cores[2], summaries[3], cores[4]],
        "summaries at the ends, cores between": [summaries[0], cores[1], cores[2], cores[3], summaries[4]],
    }
    for name, snaps in mixes.items():
        d, err = diff(snaps)
        if err:
            R.case("heapdiff over %s" % name, [err])
            continue
        compare("heapdiff over %s" % name, d, over_cores)
        truth("heapdiff over %s" % name, d, recs)
        kinds = [s["kind"] for s in d["snapshots"]]
        want = ["summary" if p in summaries else "core" for p in snaps]
        R.case("heapdiff over %s: each snapshot's kind" % name,
               [] if kinds == want else ["%s, expected %s" % (kinds, want)])

    r = hstest.run([HEAPDIFF, cores[0], summaries[2], cores[4]], timeout=300)
    lines = r.out.splitlines()
    R.case("text: says types were compared by their totals, and which snapshot is a summary",
           [] if r.rc == 0 and len(lines) > 1 and
           lines[1].startswith("compared by type totals: %s is a summary" % summaries[2])
           else ["exit %s: %r" % (r.rc, lines[:3])])
    problems = [] if r.rc == 0 and SECRET not in r.out.encode() else ["exit %s" % r.rc]
    R.case("text: no secret in heapdiff's output either", problems)

    d2, err = diff([summaries[0], summaries[-1]])
    problems = [err] if err else []
    if d2:
        if any(t["trend"] is not None for t in d2["types"]):
            problems.append("a trend from two snapshots")
        rows = {t["type"]: t for t in d2["types"]}
        want = {t["type"]: t["delta_bytes"] for t in over_cores["types"]}
        for label, row in rows.items():
            if row["delta_bytes"] != want.get(label):
                problems.append("%s: delta %s, over the cores %s" % (label, row["delta_bytes"], want.get(label)))
    R.case("two summaries: the deltas of the cores, no trend", problems)

    other = hstest.take_core("corruptme", WORK, "other", record=False).core
    other_summary = os.path.join(WORK, "other.summary.json")
    r = hstest.run([HS, "summary", other, "-o", other_summary], timeout=300)
    problems = [] if r.rc == 0 else ["summary: " + r.describe()]
    for snaps in ([summaries[0], other_summary], [cores[0], other_summary], [summaries[0], other]):
        r = hstest.run([HEAPDIFF] + snaps, timeout=300)
        if r.rc != 1 or "same program" not in r.err or len(r.err.strip().splitlines()) != 1:
            problems.append("%s: exit %s: %r" % (snaps, r.rc, r.err))
    r = hstest.run([HEAPDIFF, summaries[0], other_summary, "--force"], timeout=300)
    if r.rc != 0:
        problems.append("--force: exit %s: %s" % (r.rc, r.err))
    R.case("a summary of another program: one-line error, --force compares", problems)

    cut = json.load(open(summaries[2]))
    cut["types"] = cut["types"][:1]
    cut["types_truncated"] = True
    cut_path = os.path.join(WORK, "cut-list.summary.json")
    with open(cut_path, "w") as f:
        json.dump(cut, f)
    r = hstest.run([HEAPDIFF, summaries[0], cut_path, summaries[4]], timeout=300)
    want = "heapsift: warning: %s lists 1 of its %d types: the others count as 0 bytes in its column" \
        % (cut_path, cut["types_total"])
    R.case("a summary whose types list was cut: compared, with a warning saying so",
           [] if r.rc == 0 and r.err.strip() == want else ["exit %s: %r" % (r.rc, r.err)])

    bad_inputs(cores, summaries)
    hstest.failed_writes(R, "summary -o", WORK,
                         lambda path: [HS, "summary", cores[0], "-o", path])
    r = hstest.run([HS, "summary", cores[0]], timeout=60)
    R.case("summary without -o is a usage error", [] if r.rc == 2 else ["exit %s" % r.rc])
    r = hstest.run([HS, "summary", cores[0], "-o", cores[0]], timeout=60)
    R.case("summary -o onto its own core is refused, the core kept",
           [] if r.rc == 2 and open(cores[0], "rb").read(4) == b"\x7fELF" else
           ["exit %s: %s" % (r.rc, r.err)])
    # redact shares the check (hs_cli_output_not_core)
    r = hstest.run([HS, "redact", cores[0], "-o", cores[0]], timeout=60)
    R.case("redact -o onto its own core is refused, the core kept",
           [] if r.rc == 2 and "must not be the input core" in r.err and
           open(cores[0], "rb").read(4) == b"\x7fELF" else ["exit %s: %s" % (r.rc, r.err)])
    status = R.finish()
    if status == 0:
        shutil.rmtree(WORK, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
