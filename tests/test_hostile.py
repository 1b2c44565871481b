#!/usr/bin/env python3
"""Hostile input, round two: what a mutation run found, as regressions.

Cases (each run also checked for hangs, crashes, sanitizer reports and stray
stderr lines, as in test_bad_input.py):
  - one statistic: main_arena.system_mem set to 2^63 (8 bytes) gives a
    warning, and the whole heap is still listed (it used to size the block
    table's reservation and lose the heap to "out of memory");
  - a FIFO, a character device and a symbolic link to a FIFO as CORE: one
    line at once, nothing opened;
  - a core whose paths (NT_FILE and the dynamic linker's list) name a FIFO
    for the executable and for libc: the analysis ends at once, with a
    warning naming the FIFO, and nothing blocks on it;
  - an arena malloc never set up (top and every bin still zero, as in a
    static program before its first malloc): 0 allocations, no warning;
  - output paths: redact, report, export and diff --html onto a FIFO, a
    symbolic link and a device node each leave what is there as it was and
    say why in one line; `-o -` writes the same bytes to standard output.

Standard library only.  Prints "N passed, M failed" last.
"""

import json
import os
import re
import shutil
import stat
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hstest  # noqa: E402
import corrupt_core as cc  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "hostile")
TIMEOUT = 60
# "at once": a second for the normal build, more under the sanitizers
SANITIZED = "asan" in HS
AT_ONCE = 10.0 if SANITIZED else 1.0

SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                     "runtime error:")
NT_FILE = 0x46494C45

R = hstest.Checker()


def hs(*args, timeout=TIMEOUT):
    return hstest.run([HS] + [str(a) for a in args], timeout=timeout)


def basic(r):
    probs = []
    if r.timed_out:
        return ["hung: killed after %ds (%s)" % (TIMEOUT, " ".join(r.argv))]
    if r.rc < 0:
        probs.append("crashed: " + r.describe())
    for m in SANITIZER_MARKERS:
        if m in r.err:
            probs.append("sanitizer report: %s" % r.err[r.err.index(m) - 200:][:1500])
            break
    bad = [ln for ln in r.err.splitlines() if ln.strip() and not ln.startswith("heapsift: ")]
    if bad and not probs:
        probs.append("stderr lines not starting with 'heapsift: ': %r" % bad[:3])
    return probs


def one_error(r, rc, pattern, mention=None):
    probs = basic(r)
    if probs:
        return probs
    if r.rc != rc:
        probs.append("exit %s, want %d: %s" % (r.rc, rc, r.describe()))
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    if len(lines) != 1:
        return probs + ["want one line on stderr, got %r" % r.err[:800]]
    if not re.search(pattern, lines[0], re.I):
        probs.append("%r does not match /%s/" % (lines[0], pattern))
    if mention and mention not in lines[0]:
        probs.append("%r does not name %s" % (lines[0], mention))
    return probs


def fast(r, probs):
    if not r.timed_out and r.seconds > AT_ONCE:
        probs.append("took %.2f s, want under %.0f s" % (r.seconds, AT_ONCE))
    return probs


def listed(doc, want):
    have = {int(a["address"], 16): a for a in doc.get("allocations", [])}
    probs = []
    for addr, req in want:
        a = have.get(addr)
        if a is None:
            probs.append("allocation %#x not listed" % addr)
        elif a.get("state") != "used" or a.get("size", 0) < req:
            probs.append("allocation %#x: %r" % (addr, a))
        if len(probs) > 5:
            break
    return probs


# ---------------------------------------------------------------------------

def test_system_mem(core, rec):
    path = os.path.join(WORK, "huge-system-mem.core")
    try:
        cc.make_corrupt(core, path, rec, "huge-system-mem")
    except cc.CoreError as e:
        R.case("system_mem: generator", [str(e)])
        return
    live = rec["before"] + rec["mid"] + rec["after"] + rec["guard"]
    r = hs("list", path, "--state", "all", "--format", "json")
    probs = basic(r)
    doc = None
    if not probs:
        if r.rc != 0:
            probs.append("exit %s, want 0: %s" % (r.rc, r.describe()))
        else:
            doc = json.loads(r.out)
    if doc is not None:
        ws = doc.get("warnings", [])
        if not any(re.search(r"system_mem", w) for w in ws):
            probs.append("no warning names system_mem: %r" % ws[:4])
        if not any("system_mem" in ln for ln in r.err.splitlines()):
            probs.append("no stderr warning names system_mem")
        probs += listed(doc, live)
    R.case("system_mem = 2^63: a warning and every allocation listed (%d)" % len(live), probs)

    r = hs("info", path, "--format", "json")
    probs = basic(r)
    if not probs:
        if r.rc != 0:
            probs.append("exit %s: %s" % (r.rc, r.describe()))
        else:
            alloc = json.loads(r.out).get("allocator", {})
            if alloc.get("name") != "glibc" or alloc.get("error"):
                probs.append("allocator %r, want glibc's heap" % alloc)
    R.case("system_mem = 2^63: info still reads glibc's heap", probs)

    r = hs("leaks", path, "--format", "json")
    probs = basic(r)
    if not probs and r.rc != 0:
        probs.append("exit %s: %s" % (r.rc, r.describe()))
    R.case("system_mem = 2^63: leaks runs", probs)


# ---------------------------------------------------------------------------

def test_special_cores():
    fifo = os.path.join(WORK, "a-fifo.core")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    link = os.path.join(WORK, "link-to-fifo.core")
    if not os.path.lexists(link):
        os.symlink(fifo, link)
    for what, path, kind in (("a FIFO", fifo, "FIFO"),
                             ("a symbolic link to a FIFO", link, "FIFO"),
                             ("/dev/zero", "/dev/zero", "character device")):
        for cmd in ("info", "leaks"):
            r = hs(cmd, path, timeout=20)
            probs = fast(r, one_error(r, 1, "not a regular file.*" + kind, mention=path))
            R.case("%s as CORE (%s): one line at once" % (what, cmd), probs)


# ---------------------------------------------------------------------------

def notes(data):
    """(offset, size) of each PT_NOTE's data."""
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    out = []
    for i in range(phnum):
        p_type, _flags, off, _va, _pa, filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 4:
            out.append((off, filesz))
    return out


def nt_file_paths(data):
    """[(file offset, path bytes)] of the NT_FILE note's paths."""
    for off, size in notes(data):
        p, end = off, off + size
        while p + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, p)
            desc = p + 12 + ((namesz + 3) & ~3)
            if ntype == NT_FILE:
                count, = struct.unpack_from("<Q", data, desc)
                q = desc + 16 + 24 * count
                out = []
                for _ in range(count):
                    z = data.index(b"\0", q)
                    out.append((q, bytes(data[q:z])))
                    q = z + 1
                return out
            p = desc + ((descsz + 3) & ~3)
    return []


def fifo_of_length(n, tag):
    """A FIFO whose path is exactly n bytes long, under a fresh directory."""
    d = tempfile.mkdtemp(prefix="hs-", dir="/tmp")
    base = d + "/" + tag
    if len(base) > n:
        raise RuntimeError("cannot make a path of %d bytes" % n)
    path = base + "x" * (n - len(base))
    os.mkfifo(path)
    return d, path


def test_fifo_paths(core, fixture):
    with open(core, "rb") as f:
        data = bytearray(f.read())
    paths = nt_file_paths(data)
    names = sorted({p for _, p in paths})
    exe = os.path.realpath(fixture).encode()
    libc = next((p for p in names if re.search(rb"/libc\.so\.6$|/libc-[0-9.]+\.so$", p)), None)
    probs = []
    if exe not in names:
        probs.append("the executable %r is not in NT_FILE: %r" % (exe, names[:8]))
    if libc is None:
        probs.append("libc is not in NT_FILE: %r" % names[:8])
    if probs:
        R.case("paths naming a FIFO: the core's NT_FILE", probs)
        return
    dirs = []
    try:
        cases = []
        for what, orig in (("the executable", exe), ("libc", libc)):
            d, fifo = fifo_of_length(len(orig), "fifo-")
            dirs.append(d)
            # every copy of the path: NT_FILE, and l_name in the dynamic
            # linker's list (libdwfl opens both by name itself)
            needle = orig + b"\0"
            copy = bytearray(data)
            n = 0
            i = copy.find(needle)
            while i >= 0:
                copy[i:i + len(needle)] = fifo.encode() + b"\0"
                n += 1
                i = copy.find(needle, i + 1)
            path = os.path.join(WORK, "fifo-%s.core" % ("exe" if orig == exe else "libc"))
            with open(path, "wb") as f:
                f.write(copy)
            cases.append((what, path, fifo, n))
        for what, path, fifo, n in cases:
            for cmd in ("info", "list"):
                r = hs(cmd, path, "--format", "json", timeout=30)
                probs = basic(r)
                if not probs:
                    fast(r, probs)
                    if r.rc not in (0, 1):
                        probs.append("exit %s: %s" % (r.rc, r.describe()))
                    warn = [ln for ln in r.err.splitlines()
                            if fifo in ln and "FIFO" in ln]
                    if not warn:
                        probs.append("no warning names the FIFO %s: %r" % (fifo, r.err[:800]))
                    if r.rc == 0:
                        json.loads(r.out)
                R.case("%s's path (%d copies) names a FIFO: %s ends at once with a warning"
                       % (what, n, cmd), probs)
    finally:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------

def test_uninitialized_arena():
    """fx_nomalloc's core with main_arena as before malloc_init_state ran:
    top, last_remainder and bins[] zero (the 2,048 bytes from top on)."""
    try:
        core = hstest.take_core("fx_nomalloc", WORK, "nomalloc", record=False).core
    except (hstest.HsError, OSError) as e:
        R.case("uninitialized arena: take the core", [str(e)])
        return
    r = hs("info", core, "--format", "json")
    probs = basic(r)
    arenas = json.loads(r.out).get("allocator", {}).get("arenas", []) if not probs and r.rc == 0 else []
    if not arenas:
        R.case("uninitialized arena: find main_arena", probs + ["no arena in info: %s" % r.describe()])
        return
    arena = int(arenas[0]["address"], 16)
    path = os.path.join(WORK, "uninit-arena.core")
    with cc.Core(core) as c:
        top = c.u64(arena + cc.MALLOC_STATE_TOP)
        if top != arena + cc.MALLOC_STATE_TOP:
            R.case("uninitialized arena: main_arena.top is its own bin",
                   ["top %#x, main_arena %#x" % (top, arena)])
            return
    shutil.copyfile(core, path)
    with cc.Core(path, writable=True) as c:
        c.write(arena + cc.MALLOC_STATE_TOP, bytes(cc.MALLOC_STATE_NEXT - cc.MALLOC_STATE_TOP - 16))
    for cmd in ("info", "list", "leaks"):
        r = hs(cmd, path, "--format", "json")
        probs = basic(r)
        if not probs:
            if r.rc != 0:
                probs.append("exit %s: %s" % (r.rc, r.describe()))
            else:
                doc = json.loads(r.out)
                if doc.get("warnings"):
                    probs.append("warnings: %r" % doc["warnings"][:3])
                if r.err.strip():
                    probs.append("stderr: %r" % r.err[:300])
                if cmd == "list" and doc.get("allocations"):
                    probs.append("%d allocations listed" % len(doc["allocations"]))
                if cmd == "info" and not doc["allocator"]["arenas"][0].get("uninitialized"):
                    probs.append("info does not say the arena was never set up")
        R.case("uninitialized arena: %s: no allocation, no warning" % cmd, probs)


# ---------------------------------------------------------------------------

def snapshot(path):
    """What is at path, to compare before and after: kind, target, bytes."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as f:
            return ("file", f.read())
    return (stat.S_IFMT(st.st_mode), st.st_rdev, st.st_ino)


def test_outputs(core):
    d = os.path.join(WORK, "outputs")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    target = os.path.join(d, "target.txt")
    with open(target, "w") as f:
        f.write("keep me\n")
    spots = {}
    spots["a FIFO"] = os.path.join(d, "fifo")
    os.mkfifo(spots["a FIFO"])
    spots["a symbolic link"] = os.path.join(d, "link")
    os.symlink(target, spots["a symbolic link"])
    spots["a dangling symbolic link"] = os.path.join(d, "dangling")
    os.symlink(os.path.join(d, "nowhere"), spots["a dangling symbolic link"])
    if os.geteuid() == 0:
        # a copy of /dev/null's node, never the system's own
        spots["a device"] = os.path.join(d, "null")
        os.mknod(spots["a device"], 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    else:
        R.skip("outputs onto a device node", "needs root for mknod")
    writers = (
        ("redact -o", lambda out: ["redact", core, "-o", out]),
        ("report -o", lambda out: ["report", core, "-o", out]),
        ("export --pprof", lambda out: ["export", core, "--pprof", out]),
        ("export --folded", lambda out: ["export", core, "--folded", out]),
        ("diff --html", lambda out: ["diff", core, core, "--html", out]),
    )
    for wname, argv in writers:
        for what, path in spots.items():
            before = snapshot(path)
            listing = sorted(os.listdir(d))
            r = hs(*argv(path), timeout=300)
            probs = one_error(r, 1, r"not a regular file|symbolic link", mention=path)
            if snapshot(path) != before:
                probs.append("%s was changed" % path)
            if sorted(os.listdir(d)) != listing:
                probs.append("left behind: %s" % sorted(set(os.listdir(d)) - set(listing)))
            with open(target) as f:
                if f.read() != "keep me\n":
                    probs.append("the link's target was written")
            R.case("%s onto %s: refused in one line, left as it was" % (wname, what), probs)

    # -o - : the same bytes on standard output
    out = os.path.join(d, "redacted.core")
    r = hs("redact", core, "-o", out)
    probs = basic(r)
    if not probs and r.rc != 0:
        probs.append(r.describe())
    if not probs:
        p = hstest.run([HS, "redact", core, "-o", "-"], timeout=300, text=False)
        with open(out, "rb") as f:
            want = f.read()
        if p.rc != 0:
            probs.append("redact -o -: %s" % p.describe())
        elif p.out != want:
            probs.append("redact -o - wrote %d bytes, -o FILE %d, and they differ"
                         % (len(p.out), len(want)))
    R.case("redact -o -: standard output gets the same core as -o FILE", probs)
    r = hs("info", out, "--format", "json")
    probs = basic(r)
    if not probs and r.rc != 0:
        probs.append(r.describe())
    R.case("redact: the streamed copy is a core heapsift reads", probs)


# ---------------------------------------------------------------------------

def main():
    if not os.access(HS, os.X_OK):
        R.case("heapsift exists", ["not found: %s" % HS])
        return R.finish()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    try:
        snap = hstest.take_core("corruptme", WORK)
        core = snap.core
        rec = cc.parse_record(snap.record_path)
    except (hstest.HsError, OSError, cc.CoreError) as e:
        R.case("take the corruptme core", [str(e)])
        return R.finish()
    test_system_mem(core, rec)
    test_special_cores()
    test_fifo_paths(core, snap.binary)
    test_uninitialized_arena()
    test_outputs(core)
    status = R.finish()
    if status == 0:
        shutil.rmtree(WORK, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
