#!/usr/bin/env python3
"""scripts/bench-scale.sh keeps working: run at two tiny sizes (20,000 and
40,000 live allocations of tests/fixtures/bench_heap.c), it makes both
cores, runs `leaks --stats` on each and prints the four tables (phase
times, time per allocation, growth from the smallest size, work per
allocation).  Checks:
  - it exits 0 and scale.tsv has one row per size;
  - each row's allocation count is what the fixture recorded: its live
    blocks and the temporaries it freed, plus the few the C library itself
    holds (at most 64); its sampled peak of anonymous memory is there, at
    most the run's max RSS;
  - each table has a row per size (the growth table one per larger size),
    with a number in every phase's cell;
  - each row's --stats has the work line, whose counts agree with each
    other: every predecessor filed is an edge the search read, and the
    semi-dominators' evaluation looks at each of them at least once; the
    types followed pointers (the fixture's are typed);
  - the reference (tests/fixtures/perf_ref.c N) has a row per size in
    ref.tsv, with a positive cost for each read, printed in its table; the
    growth table has its two columns, numbers too; perf_ref refuses a
    size that is not one with one line and exit 2;
  - a size that is not a number is refused with one line and exit 2;
  - scripts/lib/peak_anon.py (the peak of the anonymous memory, which
    scripts/bench.sh and bench-real.sh report) on `leaks --stats` of the
    smaller core: a peak of at least the 12-byte table of each block and
    at most the peak RSS heapsift reports, samples taken, heapsift's own
    allocation count, the bytes per allocation those two give; a command
    that fails makes it exit 1; without --stats, no count;
  - scripts/lib/ctest_failures.py, which scripts/test.sh runs last when a
    test failed, prints a failed test's FAIL lines from ctest's log.
The figures themselves are not checked here: they are timings, and the
perf test (tests/test_perf.py) watches those.

Standard library only.  Prints "N passed, M failed" last.
"""

import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hstest  # noqa: E402

R = hstest.Checker()
SIZES = (20000, 40000)


def main():
    script = os.path.join(hstest.SRCDIR, "scripts", "bench-scale.sh")
    out = os.path.join(hstest.WORKDIR, "bench_scale")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = dict(os.environ, HEAPSIFT=hstest.HEAPSIFT,
               BENCH_FIXTURE=hstest.fixture_path("bench_heap"),
               BENCH_REF=hstest.fixture_path("perf_ref"),
               BENCH_NO_BUILD="1", BENCH_SCALE_DIR=out, BENCH_COMMANDS="leaks")
    for k in ("BENCH_CORES", "BENCH_KEEP", "BENCH_THREADS"):
        env.pop(k, None)
    p = subprocess.run(["bash", script] + [str(n) for n in SIZES], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=600)
    R.check("bench-scale.sh exits 0", p.returncode == 0,
            "exit %d: %s" % (p.returncode, (p.stderr or p.stdout)[-800:]))
    if p.returncode != 0:
        return R.finish()

    rows = []
    with open(os.path.join(out, "scale.tsv")) as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            rows.append(dict(zip(head, line.rstrip("\n").split("\t"))))
    R.check("scale.tsv: one row per size",
            [int(r["n"]) for r in rows] == list(SIZES), repr(rows)[:400])
    counts = []
    for r in rows:
        n = int(r["n"])
        m = re.search(r"([0-9]+) allocations", r.get("stats", ""))
        with open(os.path.join(out, "bench_heap-%d.rec" % n)) as f:
            rec = dict(l.split() for l in f if l.strip())
        made = int(rec["live"]) + int(rec["freed"])
        got = int(m.group(1)) if m else -1
        counts.append(got)
        R.check("%d: heapsift's allocations are the fixture's (%d live + %d freed) and libc's own"
                % (n, int(rec["live"]), int(rec["freed"])),
                made <= got <= made + 64, "heapsift: %d, fixture: %d" % (got, made))
        pk = r.get("peak_anon_kib") or ""
        R.check("%d: the sampled peak of anonymous memory, at most the max RSS" % n,
                pk.isdigit() and 0 < int(pk) <= int(r["max_rss_kib"]),
                "peak_anon_kib %r, max_rss_kib %r" % (pk, r.get("max_rss_kib")))
        w = re.search(r"work: mark ([0-9]+) edges read; dominators ([0-9]+) edges searched, "
                      r"([0-9]+) predecessors filed, ([0-9]+) semi-dominator steps, "
                      r"([0-9]+) NCA steps; types ([0-9]+) pointers followed, "
                      r"([0-9]+) inference checks", r.get("stats", ""))
        read, searched, filed, semi, _nca, followed, _checks = (
            (int(x) for x in w.groups()) if w else (0,) * 7)
        R.check("%d: the work line, its counts consistent" % n,
                w is not None and read > 0 and 0 < filed <= searched and semi >= filed
                and followed > 0, r.get("stats", "")[-600:])

    refs = []
    with open(os.path.join(out, "ref.tsv")) as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            refs.append(dict(zip(head, line.rstrip("\n").split("\t"))))

    def positive(x):
        try:
            return float(x) > 0
        except (TypeError, ValueError):
            return False
    R.check("ref.tsv: a row per size, a positive cost chased and gathered",
            [int(r["n"]) for r in refs] == list(SIZES) and
            all(positive(r.get("chase_ns")) and positive(r.get("gather_ns")) for r in refs),
            repr(refs))
    m = re.search(r"\nreference: [^\n]*\n\| N \| chase \| gather \|\n\|[-|]*\|\n((?:\|[^\n]*\n)*)",
                  p.stdout)
    R.check("the reference's table: a row per size",
            m is not None and [l.strip("|").split("|")[0].strip()
                               for l in m.group(1).splitlines()] == [str(n) for n in SIZES],
            p.stdout[:1500])
    bad_ref = subprocess.run([hstest.fixture_path("perf_ref"), "12x"], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=60)
    R.check("perf_ref: a size that is not one, exit 2 and one line",
            bad_ref.returncode == 2 and len(bad_ref.stderr.strip().splitlines()) == 1
            and "12x" in bad_ref.stderr, "exit %d: %r" % (bad_ref.returncode, bad_ref.stderr))

    text = p.stdout
    tables = re.findall(r"\n(leaks: [^\n]*)\n(\|[^\n]*\n)\|[-|]*\|\n((?:\|[^\n]*\n)*)", text)
    R.check("four tables", len(tables) == 4, text[-1500:])
    for title, header, body in tables:
        label = ("growth table" if "relative" in title else
                 "per-allocation table" if "nanoseconds" in title else
                 "work table" if "work per allocation" in title else "phase table")
        cols = [c.strip() for c in header.strip().strip("|").split("|")]
        lines = [l for l in body.splitlines() if l.strip()]
        want = [str(c) for c in counts[1:]] if "relative" in title else [str(c) for c in counts]
        firsts = [l.strip("|").split("|")[0].strip() for l in lines]
        R.check("%s: a row per size" % label, firsts == want,
                "rows %s, sizes %s" % (firsts, want))
        if "relative" in title:
            R.check("growth table: the reference's two columns", cols[-2:] == ["chase", "gather"],
                    header)
        if "work per allocation" in title:
            R.check("work table: the words, the edges and the seven counts", cols[1:] == [
                "graph: words scanned", "edges", "mark: edges read",
                "dominators: edges searched", "predecessors filed", "semi-dominator steps",
                "NCA steps", "types: pointers followed", "inference checks"], header)
        ok = all(len(l.strip().strip("|").split("|")) == len(cols) for l in lines)
        cells = [c.strip() for l in lines for c in l.strip().strip("|").split("|")[1:]]
        # "-" in the growth table: a phase too short to time at the smallest size
        num = r"[0-9]+(\.[0-9]+)?" + ("|-" if "relative" in title else "")
        R.check("%s: every cell a number" % label, ok and cells and all(
            re.fullmatch(num, c) for c in cells), body)

    bad = subprocess.run(["bash", script, "12x"], env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=60)
    R.check("a size that is not a number: exit 2, one line",
            bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
            and "12x" in bad.stderr, "exit %d: %r" % (bad.returncode, bad.stderr))
    check_peak_anon(os.path.join(out, "bench_heap-%d.core" % SIZES[0]), counts[0])
    shutil.rmtree(out, ignore_errors=True)
    check_ctest_failures()
    return R.finish()


def check_peak_anon(core, allocs):
    script = os.path.join(hstest.SRCDIR, "scripts", "lib", "peak_anon.py")
    errfile = os.path.join(hstest.WORKDIR, "peak_anon.err")

    def run(*args, **env):
        p = subprocess.run([sys.executable, script] + list(args),
                           env=dict(os.environ, **env), stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=300)
        f = p.stdout.split()
        return p, dict(zip(f[0::2], f[1::2]))

    p, r = run(hstest.HEAPSIFT, "leaks", core, "--stats", PEAK_ANON_STDERR=errfile)
    R.check("peak_anon.py: exit 0 and one line of five name-value pairs",
            p.returncode == 0 and len(r) == 5 and r.get("exit") == "0",
            "exit %d: %r %r" % (p.returncode, p.stdout, p.stderr))
    with open(errfile) as f:
        m = re.search(r"peak RSS ([0-9]+) KiB", f.read())
    hwm = int(m.group(1)) if m else 0
    peak = int(r.get("peak_anon_kib", "0"))
    R.check("peak_anon.py: the peak is at least the block table and at most the peak RSS",
            allocs * 12 / 1024 <= peak <= hwm,
            "peak %d KiB, %d blocks, peak RSS %d KiB" % (peak, allocs, hwm))
    R.check("peak_anon.py: samples taken", int(r.get("samples", "0")) >= 1, p.stdout)
    R.check("peak_anon.py: heapsift's allocations and the bytes per allocation",
            r.get("allocations") == str(allocs) and allocs > 0 and
            r.get("bytes_per_alloc") == "%.1f" % (peak * 1024 / allocs), p.stdout)
    p, r = run(hstest.HEAPSIFT, "leaks", core + ".missing", "--stats")
    R.check("peak_anon.py: a command that fails, exit 1 and its exit status",
            p.returncode == 1 and r.get("exit") not in (None, "0"), p.stdout)
    p, r = run(hstest.HEAPSIFT, "info", core)
    R.check("peak_anon.py: without --stats, no allocation count",
            p.returncode == 0 and r.get("allocations") == "-" and
            r.get("bytes_per_alloc") == "-", p.stdout)


def check_ctest_failures():
    """scripts/lib/ctest_failures.py (what scripts/test.sh prints last when
    a test failed) on a made-up tree: ctest's LastTest.log with a passed and
    a failed test, LastTestsFailed.log naming the failed one."""
    script = os.path.join(hstest.SRCDIR, "scripts", "lib", "ctest_failures.py")
    tree = os.path.join(hstest.WORKDIR, "ctest_failures")
    tmp = os.path.join(tree, "Testing", "Temporary")
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(tmp)

    def section(i, name, out):
        return ("%d/2 Testing: %s\n%d/2 Test: %s\nCommand: \"x\"\nDirectory: /\n"
                "\"%s\" start time: Dec 06 02:44 UTC\nOutput:\n%s\n%s<end of output>\n"
                "Test time =   1.00 sec\n%s\nTest Passed.\n"
                % (i, name, i, name, name, "-" * 58, out, "-" * 58))
    with open(os.path.join(tmp, "LastTest.log"), "w") as f:
        f.write("Start testing: Dec 06 02:44 UTC\n" + "-" * 58 + "\n")
        f.write(section(1, "quiet", "FAIL nothing: this test passed\n"))
        f.write(section(2, "loud", "ok 1\nFAIL loud: the block is possible\n"
                        "     memcheck 1 possible\nfailures:\n  loud: the block\n"
                        "1 passed, 1 failed\n"))
    with open(os.path.join(tmp, "LastTestsFailed.log"), "w") as f:
        f.write("2:loud\n")
    p = subprocess.run([sys.executable, script, tree], capture_output=True,
                       text=True, timeout=60)
    lines = p.stdout.splitlines()
    R.check("ctest_failures.py: exit 0", p.returncode == 0,
            "exit %d: %s" % (p.returncode, p.stderr))
    R.check("ctest_failures.py: names the failed test, prints its FAIL line, the "
            "line under it and its summary",
            any(l.startswith("==> failed in") and l.endswith(": loud") for l in lines)
            and "    FAIL loud: the block is possible" in lines
            and lines[lines.index("    FAIL loud: the block is possible") + 1]
            == "         memcheck 1 possible"
            and "      loud: the block" in lines, p.stdout)
    R.check("ctest_failures.py: nothing of the test that passed",
            "this test passed" not in p.stdout, p.stdout)
    os.unlink(os.path.join(tmp, "LastTestsFailed.log"))
    p = subprocess.run([sys.executable, script, tree], capture_output=True,
                       text=True, timeout=60)
    R.check("ctest_failures.py: silent for a tree with no failed test",
            p.returncode == 0 and p.stdout == "", repr(p.stdout))
    shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
