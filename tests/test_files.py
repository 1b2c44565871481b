#!/usr/bin/env python3
"""`heapsift files` and the leaked streams of `leaks` against the record of
tests/fixtures/fx_files.c: 50 fopen'ed streams, 40 kept in a global and 10
leaked, on a gcore and on the kernel's core of the same stop.  Every
stream stays on libc's list (_IO_list_all), so the leaked ones are leaked
only if heapsift does not take the list for references.

Then the same fixture with "bad": one kept stream's _chain made into a
loop and another's _fileno garbage: warnings, and still all 50 streams
with the right classes (found by type past the loop), no crash.
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402
from hstest import Checker, HsError, hx  # noqa: E402


def files_dir(name):
    d = os.path.join(hstest.WORKDIR, name + ".files")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def snapshot(name, bad):
    d = files_dir(name)
    args = [d] + (["bad"] if bad else [])
    snap = hstest.take_core("fx_files", name=name, args=args, kernel=not bad)
    snap.record = hstest.load_record(snap.record_path, "record of " + name)
    if isinstance(snap.kernel, hstest.Snapshot):
        snap.kernel.record = snap.record
    return snap


def check_streams(ck, label, snap, doc, bad=False):
    rec = snap.record
    ck.case("%s: the fixture's own checks held" % label, rec.get("selfcheck", []))
    streams = {hx(s["address"]): s for s in doc["streams"]}
    heap = [s for s in doc["streams"] if s["kind"] == "heap"]
    ck.check("%s: 50 heap streams listed" % label, len(heap) == 50,
             "%d: %s" % (len(heap), sorted(s["address"] for s in heap)))
    problems = []
    for r in rec["streams"]:
        s = streams.get(hx(r["address"]))
        if not s:
            problems.append("stream %d at %s not listed" % (r["index"], r["address"]))
            continue
        want_fd = None if r["garbage_fd"] else r["fd"]
        want_class = "leak-root" if r["leaked"] else "reachable"
        got = (s["kind"], s["fd"], s["mode"], s["class"], s["leaked"])
        want = ("heap", want_fd, r["mode"], want_class, r["leaked"])
        if got != want:
            problems.append("stream %d at %s: (kind, fd, mode, class, leaked) %r, expected %r"
                            % (r["index"], r["address"], got, want))
        buf = s["buffer"] or {}
        if (hx(buf.get("address", 0)), buf.get("size")) != (hx(r["buffer"]), r["buffer_size"]):
            problems.append("stream %d: buffer %r, expected %s of %d bytes"
                            % (r["index"], buf, r["buffer"], r["buffer_size"]))
        elif hx(buf.get("block") or 0) != hx(r["buffer"]):
            problems.append("stream %d: buffer not named as its own block: %r" % (r["index"], buf))
        held = s["held_by"] or {}
        if r["leaked"]:
            if held.get("kind") != "leaked":
                problems.append("leaked stream %d held by %r" % (r["index"], held))
        elif held.get("kind") != "global" or "g_kept" not in (held.get("name") or ""):
            problems.append("kept stream %d held by %r, expected global g_kept"
                            % (r["index"], held))
        if not bad and not s["on_list"]:
            problems.append("stream %d is not on libc's list" % r["index"])
    ck.case("%s: every stream with its fd, mode, buffer, class and holder" % label, problems)
    nleaked = sum(1 for r in rec["streams"] if r["leaked"])
    ck.check("%s: counts (10 leaked, 40 reachable)" % label,
             (doc["leaked"], doc["reachable"], nleaked) == (10, 40, 10),
             "leaked %s reachable %s" % (doc["leaked"], doc["reachable"]))


def check_good(ck, label, snap):
    doc = hstest.heapsift_json("files", snap)
    check_streams(ck, label, snap, doc)
    import test_schema
    errors = []
    test_schema.validate(doc, test_schema.SCHEMA["commands"]["files"], "files", errors)
    ck.case("%s: files' JSON follows docs/schema.json" % label, errors)
    static = {s["name"]: s for s in doc["streams"] if s["kind"] == "static"}
    ck.check("%s: stdin, stdout, stderr are static with fds 0, 1, 2" % label,
             {k: v["fd"] for k, v in static.items()} == {"stdin": 0, "stdout": 1, "stderr": 2},
             repr(static))
    ck.check("%s: the whole list was walked (53 streams, no loop)" % label,
             doc["list"] == {"found": True, "length": 53, "loop": False, "bad_link": False},
             repr(doc["list"]))
    ck.check("%s: no warnings" % label, doc["warnings"] == [], repr(doc["warnings"]))

    # without libc's debug info: the table's layout, the same streams
    nodebug = hstest.heapsift_json("files", snap, "--no-system-debug")
    ck.check("%s: --no-system-debug: the layout comes from the table" % label,
             nodebug["layout"] == "table" and doc["layout"] == "dwarf",
             "%s / %s" % (nodebug["layout"], doc["layout"]))
    strip = lambda d: [{k: v for k, v in s.items() if k != "held_by"} for s in d["streams"]]
    ck.check("%s: --no-system-debug: the same streams, fds, buffers and classes" % label,
             strip(nodebug) == strip(doc))

    # leaks: the leaked streams, as a JSON array and a line of text
    leaks = hstest.heapsift_json("leaks", snap)
    errors = []
    test_schema.validate(leaks, test_schema.SCHEMA["commands"]["leaks"], "leaks", errors)
    ck.case("%s: leaks' JSON follows docs/schema.json" % label, errors)
    want = sorted((hx(r["address"]), r["fd"]) for r in snap.record["streams"] if r["leaked"])
    got = sorted((hx(x["address"]), x["fd"]) for x in leaks.get("leaked_files", []))
    ck.check("%s: leaks names the 10 leaked streams and their fds" % label, got == want,
             "got %s\nwant %s" % (got, want))
    r = hstest.run_heapsift(["leaks", snap.core, "--exe", snap.binary])
    line = [ln for ln in r.out.splitlines() if ln.startswith("Leaked FILE streams: 10")]
    fds = sorted(fd for _, fd in want)
    ok = bool(line) and all(" %d" % fd in line[0] for fd in fds)
    ck.check("%s: leaks' text has a line with the 10 descriptors" % label, ok and r.rc == 0,
             r.out[-1500:])

    # a leaked stream's buffer is charged to it, and no list link points to it
    leaked = [r for r in snap.record["streams"] if r["leaked"]]
    newest = max(leaked, key=lambda r: r["index"])   # the head of libc's list
    show = hstest.heapsift_json("show", snap, newest["address"])
    ck.check("%s: show: the newest leaked stream (head of _IO_list_all) is pointed to by nothing"
             % label, show.get("reach") == "leak-root" and show.get("pointed_by") == [],
             "reach %s pointed_by %r" % (show.get("reach"), show.get("pointed_by")))
    buf = hstest.heapsift_json("show", snap, newest["buffer"])
    ck.check("%s: show: its buffer is indirect, held by it" % label,
             buf.get("reach") == "indirect" and
             {hx(p.get("allocation", 0)) for p in buf.get("pointed_by", [])} == {hx(newest["address"])},
             "reach %s pointed_by %r" % (buf.get("reach"), buf.get("pointed_by")))

    # text output: one row per stream, the leaked ones as leak roots
    r = hstest.run_heapsift(["files", snap.core, "--exe", snap.binary])
    rows = {}
    for ln in r.out.splitlines():
        parts = ln.split()
        if parts and parts[0].startswith("0x"):
            rows[hx(parts[0])] = parts
    problems = []
    for rec in snap.record["streams"]:
        p = rows.get(hx(rec["address"]))
        want_cls = "leak-root" if rec["leaked"] else "reachable"
        if not p or p[1] != str(rec["fd"]) or p[2] != rec["mode"] or want_cls not in p:
            problems.append("stream %d: row %r" % (rec["index"], p))
    ck.case("%s: text rows" % label, problems + ([] if r.rc == 0 else [r.describe()]))


def check_bad(ck, snap):
    label = "bad"
    r = hstest.run_heapsift(["files", snap.core, "--exe", snap.binary, "--format", "json"])
    if not ck.check("bad: files exits 0", r.rc == 0, r.describe()):
        return
    import json
    doc = json.loads(r.out)
    check_streams(ck, label, snap, doc, bad=True)
    warn = " ".join(doc["warnings"])
    ck.check("bad: a warning says the list loops", "loop" in warn, warn)
    ck.check("bad: a warning names the garbage descriptor", "123456789" in warn, warn)
    ck.check("bad: the list is marked as a loop, walked up to it",
             doc["list"]["loop"] and doc["list"]["length"] == 30, repr(doc["list"]))
    rec = {r["index"]: r for r in snap.record["streams"]}
    by_addr = {hx(s["address"]): s for s in doc["streams"]}
    off = [i for i in range(50) if by_addr.get(hx(rec[i]["address"]), {}).get("on_list") != (i >= 20)]
    ck.case("bad: streams 20..49 on the list, 0..19 found by type", off)
    static = sorted((s["name"], s["fd"], s["on_list"]) for s in doc["streams"] if s["kind"] == "static")
    ck.check("bad: stdin, stdout, stderr found by their symbols past the loop",
             static == [("stderr", 2, False), ("stdin", 0, False), ("stdout", 1, False)],
             repr(static))
    t = hstest.run_heapsift(["files", snap.core, "--exe", snap.binary])
    ck.check("bad: text output says the list is damaged",
             t.rc == 0 and "damaged" in t.out and "warning" in t.err, t.describe())
    lk = hstest.run_heapsift(["leaks", snap.core, "--exe", snap.binary])
    ck.check("bad: leaks still names 10 leaked streams", lk.rc == 0 and
             "Leaked FILE streams: 10" in lk.out, lk.describe())


def main():
    ck = Checker()
    try:
        snap = snapshot("fx_files", bad=False)
    except HsError as e:
        ck.check("fx_files: core taken", False, str(e))
        return ck.finish()
    for s in (snap, snap.kernel):
        if isinstance(s, HsError):
            ck.skip("fx_files[kernel]", str(s))
            continue
        try:
            check_good(ck, s.label, s)
        except HsError as e:
            ck.check("%s: heapsift ran" % s.label, False, str(e))
    try:
        check_bad(ck, snapshot("fx_files_bad", bad=True))
    except HsError as e:
        ck.check("bad: heapsift ran", False, str(e))
    if not os.environ.get("HS_KEEP_CORES") and ck.failed == 0:
        for name in ("fx_files", "fx_files_bad"):
            hstest.remove_cores(name)
            shutil.rmtree(os.path.join(hstest.WORKDIR, name + ".files"), ignore_errors=True)
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())
