#!/usr/bin/env python3
"""Print what each failed test of the last ctest run in a build tree said.

ctest --output-on-failure prints a failed test's output where the test
ends, among the others' lines, and a CI log that keeps only a part of the
output can lose it.  scripts/test.sh calls this at the very end, so that
the failed checks are the last thing printed:

  ctest_failures.py BUILD_DIR [BUILD_DIR ...]

For each failed test: its "FAIL" lines with the indented lines under each,
and its "failures:" summary (at most MAX_LINES lines), then the last TAIL
lines of its output.  Nothing is printed for a tree with no failed test.
"""

import os
import re
import sys

MAX_LINES = 60
TAIL = 15
DETAIL = 10  # indented lines kept under a FAIL line


def outputs(log_path):
    """{test name: output text} from ctest's LastTest.log."""
    try:
        with open(log_path, errors="replace") as f:
            text = f.read()
    except OSError:
        return {}
    found = {}
    for m in re.finditer(r"^\d+/\d+ Test: (\S+)\n.*?^Output:\n-+\n(.*?)^<end of output>",
                         text, re.S | re.M):
        found[m.group(1)] = m.group(2)
    return found


def failed_names(path):
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return [ln.split(":", 1)[1] for ln in lines if ":" in ln]


def report(build):
    tmp = os.path.join(build, "Testing", "Temporary")
    names = failed_names(os.path.join(tmp, "LastTestsFailed.log"))
    if not names:
        return
    outs = outputs(os.path.join(tmp, "LastTest.log"))
    for name in names:
        print("\n==> failed in %s: %s" % (build, name))
        out = outs.get(name)
        if out is None:
            print("    (no output recorded in LastTest.log)")
            continue
        lines = out.splitlines()
        keep, in_summary, after_fail = [], False, 0
        for ln in lines:
            if ln.startswith("failures:"):
                in_summary = True
            if in_summary or "FAIL" in ln:
                keep.append(ln)
                after_fail = DETAIL
            elif after_fail and ln[:1].isspace():
                # what a check printed under its FAIL line
                keep.append(ln)
                after_fail -= 1
            else:
                after_fail = 0
        for ln in keep[:MAX_LINES]:
            print("    " + ln)
        if len(keep) > MAX_LINES:
            print("    ... %d more lines" % (len(keep) - MAX_LINES))
        print("    -- the last %d lines:" % min(TAIL, len(lines)))
        for ln in lines[-TAIL:]:
            print("    " + ln)


def main():
    if len(sys.argv) < 2:
        print("usage: ctest_failures.py BUILD_DIR [BUILD_DIR ...]", file=sys.stderr)
        return 2
    for build in sys.argv[1:]:
        report(build)
    return 0


if __name__ == "__main__":
    sys.exit(main())
