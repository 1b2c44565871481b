#!/usr/bin/env python3
"""The glibc walk without libc's debug info (--no-system-debug).

  - every glibc fixture of test_glibc_truth.py: list, leaks, top, types,
    frag and info's mallinfo2 give the same JSON with libc's debug info
    hidden as with it (only where the debug info came from may differ), and
    info says the layouts came from the layout row and main_arena, mp_ and
    the tcache from libc's code;
  - an unknown release (a copy of libc, under --sysroot, whose version
    string says 2.99): one line naming the version, the build-id and
    scripts/gen_gllayout.py;
  - a corrupted main_arena (its arena ring broken in a copy of the core):
    one clear line, or a partial result with a warning, never a whole walk;
  - a row that does not fit (the copy of libc says 2.31, whose row has
    another malloc_par): refused, or partial with warnings.

Standard library only; prints "N passed, M failed" last.
"""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "nodebug")
R = hstest.Checker()
HERE = os.path.dirname(os.path.abspath(__file__))

FIXTURES = ["fx_sizes", "fx_tcache", "fx_fastbin", "fx_bins", "fx_mmap",
            "fx_realloc", "fx_threads", "fx_shared_arena", "fx_bigheap",
            "fx_tuned", "fx_noncontig", "fx_trim", "fx_nomalloc"]
COMMANDS = [("list", "--state", "all"), ("leaks", "--list"), ("top",),
            ("types",), ("frag",)]
# keys that say where debug info came from
DEBUG_KEYS = {"debug", "found", "debug_source", "debug_path"}


def hs(*args, env=None):
    return hstest.run([HS] + [str(a) for a in args], timeout=300, env=env)


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in DEBUG_KEYS}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def first_diff(a, b, path=""):
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path or "/", a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s/%s only on one side" % (path, k)
            d = first_diff(a[k], b[k], path + "/" + k)
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d vs %d items" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: %r vs %r" % (path, a, b)


def json_of(r, probs):
    if r.rc != 0:
        probs.append("exit %s: %s" % (r.rc, r.err.strip()[:300]))
        return None
    try:
        return json.loads(r.out)
    except ValueError as e:
        probs.append("bad JSON: %s" % e)
        return None


def one_line_error(r):
    lines = [x for x in r.err.splitlines() if x.startswith("heapsift: ") and
             not x.startswith("heapsift: warning: ")]
    return lines[0] if len(lines) == 1 else None


def warned_or_refused(r, whole):
    """A JSON run that must be refused in one line (exit 1) or give a
    partial or warned result; whole: the problem when it gave neither."""
    if r.rc == 0:
        try:
            doc = json.loads(r.out)
        except ValueError:
            doc = {}
        return [] if doc.get("warnings") or doc.get("partial") else [whole]
    if r.rc != 1 or not one_line_error(r):
        return ["exit %s: %r" % (r.rc, r.err[-400:])]
    return []


def test_same(name, core, extra=(), case=None):
    """extra: options for every run (--sysroot ROOT); case(name, problems)
    reports (default: this test's Checker)."""
    case = case or R.case
    for cmd in [("info",)] + COMMANDS:
        probs = []
        a = json_of(hs(*cmd, core, "--format", "json", *extra), probs)
        b = json_of(hs(*cmd, core, "--format", "json", "--no-system-debug",
                       *extra), probs)
        if a is not None and b is not None:
            if cmd[0] == "info":
                a, b = a.get("allocator", {}), b.get("allocator", {})
                how = {f.get("item"): f.get("how") for f in b.get("found", [])}
                if how.get("layouts") != "layout_row":
                    probs.append("layouts found by %r, want layout_row" % how.get("layouts"))
                for item in ("main_arena", "mp_"):
                    if how.get(item) != "disassembly":
                        probs.append("%s found by %r" % (item, how.get(item)))
                if how.get("tcache") not in ("disassembly",):
                    probs.append("tcache found by %r" % how.get("tcache"))
            if cmd[0] == "leaks":
                # ld.so's cache_new is a local symbol of its debug file:
                # without it that word stays a global root (8 bytes)
                ga = a.get("roots", {}).get("bytes", {}).get("global")
                gb = b.get("roots", {}).get("bytes", {}).get("global")
                if isinstance(ga, int) and isinstance(gb, int) and 0 <= gb - ga <= 8:
                    b["roots"]["bytes"]["global"] = ga
                # libc's data is split into roots by its debug symbols:
                # the number of named roots says where debug info came from
                b.get("roots", {}).pop("count", None)
                a.get("roots", {}).pop("count", None)
            d = first_diff(strip(a), strip(b))
            if d:
                probs.append("differs: " + d)
        case("%s: %s the same without debug info" % (name, cmd[0]), probs)


def libc_of(core_info):
    return [m for m in core_info["modules"]
            if os.path.basename(m["name"]).startswith("libc.so")][0]


def other_path(path):
    """The same path with its last character changed: a file that does not
    exist here, of the same length (the core's strings keep their size)."""
    return path[:-1] + ("X" if path[-1] != "X" else "Y")


def fake_libc(core_info, version_from, version_to):
    """A --sysroot directory holding, at other_path(libc's path), a copy of
    the core's libc whose version string says version_to (same length,
    same build-id)."""
    libc = libc_of(core_info)
    root = os.path.join(WORK, "root-" + version_to)
    data = open(libc["file"], "rb").read()
    old = b"release version " + version_from.encode()
    if old not in data:
        return None
    data = data.replace(old, b"release version " + version_to.encode())
    # the core may name it through the /usr merge (/usr/lib/... for /lib/...)
    for path in {libc["file"], "/usr" + libc["file"]}:
        dst = root + other_path(path)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        open(dst, "wb").write(data)
    return root


def fake_core(core, core_info, tag):
    """A copy of the core in which libc's path (NT_FILE, the link map) is
    other_path(path): libdwfl cannot open the system's libc by that name,
    and --sysroot DIR gives it the altered copy, as for a core from
    another machine."""
    path = libc_of(core_info)["file"].encode()
    data = open(core, "rb").read()
    if path not in data:
        return None
    out = os.path.join(WORK, "core-" + tag)
    open(out, "wb").write(data.replace(path, other_path(path.decode()).encode()))
    return out


def test_unknown_release(core, info):
    name = "unknown release"
    libc = libc_of(info)
    ver = info["allocator"].get("version") or ""
    root = fake_libc(info, ver, "2.99")
    bad = fake_core(core, info, "2.99")
    if not root or not bad:
        R.skip(name, "cannot copy libc with its version string")
        return
    r = hs("list", bad, "--sysroot", root, "--no-system-debug")
    probs = []
    line = one_line_error(r)
    if r.rc != 1 or not line:
        probs.append("want exit 1 with one error line: exit %s, %r" % (r.rc, r.err[-400:]))
    else:
        for want in ("2.99", libc["build_id"], "scripts/gen_gllayout.py"):
            if want not in line:
                probs.append("error line does not name %r: %s" % (want, line))
    R.case(name + ": refused in one line naming version, build-id and script", probs)

    # a row that does not fit: the same libc taken for 2.31
    root = fake_libc(info, ver, "2.31")
    bad = fake_core(core, info, "2.31")
    if not root or not bad:
        R.skip("a row that does not fit", "cannot copy libc with its version string")
        return
    r = hs("list", bad, "--sysroot", root, "--no-system-debug", "--format", "json")
    R.case("a row that does not fit: refused or warned",
           warned_or_refused(r, "a walk with another release's row gave no warning"))


def test_corrupt_arena(core, info):
    name = "corrupted main_arena"
    arenas = info["allocator"].get("arenas") or []
    main = [a for a in arenas if a.get("main")]
    if not main:
        R.skip(name, "no main arena in info")
        return
    addr = int(main[0]["address"], 16)
    bad = os.path.join(WORK, "corrupt-arena.core")
    # struct malloc_state.next: 2160 in every row of formats/gllayout.c
    subprocess.run([sys.executable, os.path.join(HERE, "corrupt_core.py"), core, bad,
                    "--u64", "%#x=%#x" % (addr + 2160, 0x4141414141414140)],
                   check=True, capture_output=True)
    r = hs("list", bad, "--no-system-debug", "--format", "json")
    probs = warned_or_refused(r, "a whole walk from a corrupted main_arena")
    if not probs and r.rc == 1 and "main_arena" not in one_line_error(r):
        probs.append("error does not name main_arena: %s" % one_line_error(r))
    R.case(name + ": one clear line or a partial result", probs)


def main():
    os.makedirs(WORK, exist_ok=True)
    names = sys.argv[1:] or FIXTURES
    first = None
    for name in names:
        try:
            core = hstest.truth_core(name, workdir=WORK).core
        except hstest.HsError as e:
            R.case(name + ": core", [str(e)])
            continue
        test_same(name, core)
        if name == "fx_threads" or first is None:
            first = core
        if name != "fx_threads" and os.environ.get("HS_KEEP_CORES") != "1" and first != core:
            os.unlink(core)
    if first:
        info = json.loads(hs("info", first, "--format", "json").out)
        test_unknown_release(first, info)
        test_corrupt_arena(first, info)
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
