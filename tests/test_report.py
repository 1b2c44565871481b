#!/usr/bin/env python3
"""heapsift report: one self-contained HTML page, checked in a browser.

Debian's headless Chromium loads the page (no network: the page must need
none), runs its script, and the test checks the DOM it renders: the summary
numbers of `top` and `leaks`, the roots, the suspects, the icicle's frames;
no console error; a screenshot is kept in the work directory.  Skipped with
a reason when Chromium is not installed.  Prints "N passed, M failed" last.
"""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "report")
R = hstest.Checker()
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def size(b):
    """The page's own size format (formats/html/report.html)."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    i, v = 0, float(b)
    while v >= 1024 and i < 4:
        v /= 1024
        i += 1
    return "%.1f %s" % (v, units[i]) if i else "%d B" % b


def js(*args):
    r = hstest.run([HS] + list(args) + ["--format", "json"], timeout=300)
    if r.rc != 0:
        raise RuntimeError("%s: exit %d: %s" % (args, r.rc, r.err))
    return json.loads(r.out)


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def check(name, core, chrome):
    page = os.path.join(WORK, name + ".html")
    r = hstest.run([HS, "report", core, "-o", page], timeout=300)
    if r.rc != 0:
        R.case("%s: report" % name, ["exit %d: %s" % (r.rc, r.err)])
        return
    html = open(page, encoding="utf-8").read()
    urls = re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)
    R.case("%s: the page is self-contained (no external resource)" % name,
           ["references: %s" % urls] if urls else [])
    if not chrome:
        R.skip("%s: browser checks" % name, "no Chromium (Debian package chromium)")
        return
    profile = os.path.join(WORK, "profile-" + name)
    shot = os.path.join(WORK, name + ".png")
    r = hstest.run([chrome] + BROWSER_FLAGS + ["--user-data-dir=" + profile,
              "--enable-logging=stderr", "--v=0", "--window-size=1280,2000",
              "--virtual-time-budget=5000", "--dump-dom", "file://" + page], timeout=180)
    dom = r.out
    console = [ln for ln in r.err.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    R.case("%s: the page loads with no console message" % name,
           [] if r.rc == 0 and not console else ["exit %d; console: %s" % (r.rc, console[:5])])
    top = js("top", core, "-n", "1000")
    leaks = js("leaks", core)
    problems = []
    want = [size(top["total"]["bytes"]), "%d blocks" % top["total"]["count"],
            size(leaks["summary"]["leaked"]["bytes"])]
    want += [row["name"] for row in top["roots"][:5] if row["kind"] not in ("shared", "leaked")]
    for text in want:
        if text.replace("<", "&lt;").replace(">", "&gt;") not in dom:
            problems.append("%r not in the rendered page" % text)
    if len(top["suspects"]) and "holds" not in dom:
        problems.append("no suspect rendered")
    cells = dom.count('class="cell')
    if cells < 2:
        problems.append("the icicle has %d frames" % cells)
    R.case("%s: the rendered page shows top's and leaks' numbers and the icicle" % name, problems)
    r = hstest.run([chrome] + BROWSER_FLAGS + ["--user-data-dir=" + profile,
              "--window-size=1280,1600", "--screenshot=" + shot, "file://" + page], timeout=180)
    R.case("%s: a screenshot is saved (%s)" % (name, shot),
           [] if os.path.exists(shot) and os.path.getsize(shot) > 10000 else ["exit %d, no screenshot" % r.rc])


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    chrome = browser()
    core = None
    for name in ("demo", "rc_leaks"):
        binary = os.path.join(hstest.FIXTURES, name)
        if not os.path.exists(binary):
            R.skip(name, "fixture not built")
            continue
        core = hstest.take_core(binary, WORK, name, record=False).core
        check(name, core, chrome)
    if core:
        r = hstest.run([HS, "report", core], timeout=60)
        R.case("report without -o is a usage error", [] if r.rc == 2 else ["exit %d" % r.rc])
        hstest.failed_writes(R, "report", WORK,
                        lambda path: [HS, "report", core, "-o", path])
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
