#!/usr/bin/env python3
"""Includes only go down the layers (docs/architecture.md, "Layers").

  0 base       src/error, log, sort, strmap, outfile, escape, safeopen, fmt,
               alloc, vector, hashtab, rankset, seccomp, edgerow, parallel,
               varint
  1 formats    formats/
  2 backends   analyzers/alloc/: the allocator-neutral heap model, the
               backend interface and the allocator walkers
  3 analyzers  the rest of analyzers/
  4 top        the rest of src/: the snapshot and the CLI

A file may include a header of its own layer or of a layer below; an
include of a layer above fails, and so does a project header the table
does not place.  Standard library only.  Prints "N passed, M failed" last.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hstest  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = {"src/error", "src/log", "src/sort", "src/strmap", "src/outfile", "src/escape",
        "src/safeopen", "src/fmt",
        "src/alloc", "src/vector", "src/hashtab", "src/rankset", "src/seccomp", "src/edgerow",
        "src/parallel", "src/varint"}
NAMES = ["base", "formats", "backends", "analyzers", "top"]
R = hstest.Checker()


def layer(path):
    stem = os.path.splitext(path)[0]
    if stem in BASE:
        return 0
    for i, d in ((1, "formats/"), (2, "analyzers/alloc/"), (3, "analyzers/"), (4, "src/")):
        if path.startswith(d):
            return i
    return None


def main():
    files = []
    for d in ("src", "formats", "analyzers"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, d)):
            files += [os.path.relpath(os.path.join(dirpath, n), ROOT)
                      for n in names if n.endswith((".c", ".h"))]
    R.case("the layers hold files (%d)" % len(files), [] if len(files) > 20 else ["too few"])
    probs = []
    for f in sorted(files):
        mine = layer(f)
        with open(os.path.join(ROOT, f), errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                if not inc.startswith(("src/", "formats/", "analyzers/")):
                    continue  # generated or local headers
                theirs = layer(inc)
                if theirs is None:
                    probs.append("%s:%d: %s is in no layer" % (f, n, inc))
                elif theirs > mine:
                    probs.append("%s:%d (%s) includes %s (%s)"
                                 % (f, n, NAMES[mine], inc, NAMES[theirs]))
    R.case("every include goes down the layers", probs)
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
