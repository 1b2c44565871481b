#!/usr/bin/env python3
"""heapdiff on four snapshots of a heap that changes in known ways.

The phases fixture (tests/fixtures/phases.c) stops after each phase and
records the address of every live block of each kind: an unbounded cache
(growing), a bounded LRU (plateau), churn (stable, all new each phase) and
a leak (growing, leaked).  The expected new and deleted blocks are computed
from those addresses with heapdiff's own matching rule (address, size and
type), the deltas from the counts; the trends are the ones the fixture was
built to show.  Standard library only; prints "N passed, M failed" last.
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
HEAPDIFF = os.path.join(os.path.dirname(HS), "heapdiff")
WORK = os.path.join(hstest.WORKDIR, "diff")
R = hstest.Checker()
PHASES = 4
# usable sizes of the fixture's structs (requests 48, 72, 104, 136)
USABLE = hstest.PHASES_USABLE
LABEL = hstest.PHASES_LABEL


def take_cores():
    return hstest.phases_cores(WORK, PHASES)


def diff(cmd, cores, *extra):
    r = hstest.run(cmd + list(cores) + ["--format", "json"] + list(extra), timeout=300)
    if r.rc != 0:
        return None, "exit %d: %s" % (r.rc, r.err.strip())
    return json.loads(r.out), None


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    cores, recs = take_cores()
    first, last = recs[0]["addresses"], recs[-1]["addresses"]
    d, err = diff([HEAPDIFF], cores)
    if err:
        R.case("heapdiff on four snapshots", [err])
        return R.finish()
    rows = {t["type"]: t for t in d["types"]}
    for kind in ("cache_entry", "lru_entry", "churn", "leak_rec"):
        label, size = LABEL[kind], USABLE[kind]
        a, z = set(first[kind]), set(last[kind])
        want = {
            "new_count": len(z - a), "deleted_count": len(a - z),
            "new_bytes": len(z - a) * size, "deleted_bytes": len(a - z) * size,
            "delta_count": len(z) - len(a), "delta_bytes": (len(z) - len(a)) * size,
            "bytes": [len(r["addresses"][kind]) * size for r in recs],
        }
        row = rows.get(label)
        problems = []
        if not row:
            problems.append("no row %r in %s" % (label, sorted(rows)))
        else:
            for k, v in want.items():
                if row.get(k) != v:
                    problems.append("%s: %s, expected %s" % (k, row.get(k), v))
        R.case("%s: new, deleted, deltas and series exact" % label, problems)
    expect_trend = {"struct cache_entry": "growing", "struct lru_entry": "plateau",
                    "struct churn": "stable", "(untyped, 136 bytes)": "growing"}
    problems = ["%s: trend %s, expected %s" % (k, rows.get(k, {}).get("trend"), v)
                for k, v in expect_trend.items() if rows.get(k, {}).get("trend") != v]
    R.case("per type trends: cache growing, LRU plateau, churn stable, leak growing", problems)
    held = rows.get("struct cache_entry", {}).get("new_bytes_held_by", {})
    R.case("the cache's new bytes are held by global g_cache",
           [] if held.get("root") == "global g_cache in phases" and
           held.get("bytes") == (len(last["cache_entry"]) - len(first["cache_entry"])) * 56
           else ["held by %s" % held])
    roots = {r["name"]: r for r in d["roots"]}
    problems = []
    g = roots.get("global g_cache in phases")
    if not g or g["trend"] != "growing" or g["retained"] != [len(r["addresses"]["cache_entry"]) * 56 for r in recs]:
        problems.append("g_cache row: %s" % g)
    lk = roots.get("(leaked: no root holds these)")
    if not lk or lk["trend"] != "growing":
        problems.append("leaked row: %s" % lk)
    R.case("per root: g_cache and the leaked blocks grow, exactly", problems)
    leaks = d["leaks"]
    n_new = len(last["leak_rec"]) - len(first["leak_rec"])
    want = {"new_leak_roots": n_new, "new_leak_root_bytes": n_new * 136,
            "leaked_delta_count": n_new, "leaked_delta_bytes": n_new * 136,
            "leaked_bytes": [len(r["addresses"]["leak_rec"]) * 136 for r in recs],
            "trend": "growing"}
    problems = ["%s: %s, expected %s" % (k, leaks.get(k), v) for k, v in want.items() if leaks.get(k) != v]
    R.case("leaks: new leak roots and leaked bytes exact, growing", problems)

    d2, err = diff([HS, "diff"], [cores[0], cores[-1]])
    problems = [err] if err else []
    if d2:
        rows2 = {t["type"]: t for t in d2["types"]}
        if rows2.get("struct cache_entry", {}).get("delta_count") != rows["struct cache_entry"]["delta_count"]:
            problems.append("heapsift diff of the ends disagrees with heapdiff of the series")
        if any(t.get("trend") is not None for t in d2["types"]):
            problems.append("a trend from two snapshots")
    R.case("heapsift diff of two cores: same deltas, no trend", problems)

    r = hstest.run([HEAPDIFF, cores[0], cores[1]], timeout=300)
    first_lines = r.out.splitlines()[:4]
    R.case("text output starts with what grew and who holds it",
           [] if r.rc == 0 and any("WHAT GREW" in ln for ln in first_lines) and "g_cache" in r.out
           else ["exit %d: %s" % (r.rc, r.out[:400])])

    page = os.path.join(WORK, "diff.html")
    r = hstest.run([HEAPDIFF] + cores + ["--html", page], timeout=300)
    chrome = shutil.which("chromium")
    problems = [] if r.rc == 0 and os.path.exists(page) else ["exit %d: %s" % (r.rc, r.err)]
    if not problems and chrome:
        r = hstest.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                   "--no-first-run", "--disable-background-networking",
                   "--disable-component-update", "--disable-sync",
                   "--user-data-dir=" + os.path.join(WORK, "profile"),
                   "--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + page],
                  timeout=180)
        console = [ln for ln in r.err.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
        if console:
            problems.append("console: %s" % console[:3])
        for text in ("struct cache_entry", "growing", "plateau", "global g_cache in phases"):
            if text not in r.out:
                problems.append("%r not in the rendered page" % text)
        if r.out.count("<polyline") < 4:
            problems.append("no sparklines")
    R.case("--html: a page that renders the comparison" + ("" if chrome else " (no browser: not rendered)"),
           problems)
    hstest.failed_writes(R, "--html", WORK, lambda path: [HEAPDIFF] + cores + ["--html", path])

    other = hstest.take_core("corruptme", WORK, "other", record=False).core
    r = hstest.run([HEAPDIFF, cores[0], other], timeout=300)
    problems = []
    if r.rc != 1 or "same program" not in r.err or len(r.err.strip().splitlines()) != 1:
        problems.append("exit %d: %r" % (r.rc, r.err))
    r = hstest.run([HEAPDIFF, cores[0], other, "--force"], timeout=300)
    if r.rc != 0:
        problems.append("--force: exit %d: %s" % (r.rc, r.err))
    R.case("cores of another program: one-line error, --force compares", problems)
    r = hstest.run([HEAPDIFF, cores[0]], timeout=60)
    R.case("one core is a usage error", [] if r.rc == 2 else ["exit %d" % r.rc])
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
