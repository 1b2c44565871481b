#!/usr/bin/env python3
"""The glibc fixtures on other Debian releases: bullseye (glibc 2.31) and
trixie (glibc 2.41), each in a debootstrap root made by scripts/roots.sh.

For each root:
  - the fixtures of test_glibc_truth.py (tests/fixtures/fx_*.c with
    truth.c) are compiled inside the root by its own gcc (chroot): a binary
    built here would need this machine's newer glibc;
  - each fixture runs in the root (chroot, with the root's /proc mounted for
    the fixtures that re-execute themselves) until it stops itself; this
    machine's gcore takes its core;
  - heapsift reads the core with --sysroot ROOT twice: with the root's
    libc6-dbg (libc's DWARF) and with --no-system-debug, which hides it
    (the layout row of formats/gllayout.c and libc's code).  Each time the
    checks of test_glibc_truth.py run: every recorded live allocation is
    listed in use with its exact usable size and chunk, freed ones where the
    fixture expects them, info's mallinfo2 equals the process's, the walk
    accounts for all of system_mem, no warnings; and info says where the
    layouts, main_arena, mp_ and the tcache came from.  Then the checks of
    test_nodebug.py: list, leaks, top, types and frag give the same JSON
    both ways;
  - gdb with the root as its sysroot (and the root's libc6-dbg) reads the
    same core (tests/gdb_oracle.py): the fixture's claims hold on that
    release, and every heap chunk heapsift lists is gdb's.

Needs root (chroot, mount).  Slow, and on first use the network: the roots
are made by scripts/roots.sh under $HS_ROOTS_DIR (default
/var/cache/heapsift-roots) and reused afterwards.  Registered with ctest
only when asked (-DHS_ROOTS=ON or HS_ROOTS=1 at configure time).

Environment: HS_ROOTS_SUITES (default "bullseye trixie"), HS_ROOTS_FIXTURES
(default: all of test_glibc_truth.py's), HS_ROOTS_DIR, HS_ROOTS_MIRROR
(passed to scripts/roots.sh), and hstest.py's.

Usage: test_roots.py [-v] [--no-oracle] [--suites S,S] [FIXTURE ...]
Prints "N passed, M failed" last.
"""

import argparse
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402
import test_glibc_truth as truth  # noqa: E402
import test_nodebug  # noqa: E402
from hstest import HsError  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOTS_DIR = os.environ.get("HS_ROOTS_DIR") or "/var/cache/heapsift-roots"
SUITES = (os.environ.get("HS_ROOTS_SUITES") or "bullseye trixie").split()
# where the fixtures are built and run, inside each root
IN_ROOT = "/tmp/heapsift-fixtures"
FLAGS = ["-std=gnu11", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread",
         "-Wall", "-Wextra", "-Werror"]
SOURCES = ["truth.c", "truth.h", "rec_core.h", "rec_out.h"]


def make_root(ck, suite):
    """scripts/roots.sh SUITE: made once, reused afterwards."""
    script = os.path.join(hstest.SRCDIR, "scripts", "roots.sh")
    env = dict(os.environ, HS_ROOTS_DIR=ROOTS_DIR)
    r = hstest.run([script, suite], env=env, timeout=3600)
    sys.stdout.write(r.out + r.err)
    root = os.path.join(ROOTS_DIR, suite)
    ok = r.rc == 0 and os.path.isfile(os.path.join(root, ".heapsift-root"))
    ck.check("%s: root at %s (%.0f s)" % (suite, root, r.seconds),
             ok, "scripts/roots.sh %s: %s" % (suite, r.describe()))
    return root if ok else None


def chroot_run(root, argv, timeout=300):
    return hstest.run(["chroot", root] + argv, timeout=timeout)


def build_fixtures(ck, suite, root, names):
    """Compile the fixtures inside the root; returns {name: host path}."""
    src = os.path.join(root, IN_ROOT.lstrip("/"), "src")
    bindir = os.path.join(root, IN_ROOT.lstrip("/"), "bin")
    os.makedirs(src, exist_ok=True)
    os.makedirs(bindir, exist_ok=True)
    fxdir = os.path.join(hstest.SRCDIR, "tests", "fixtures")
    for f in SOURCES + [n + ".c" for n in names]:
        shutil.copyfile(os.path.join(fxdir, f), os.path.join(src, f))
    built = {}
    for name in names:
        p = chroot_run(root, ["gcc"] + FLAGS + [
            "-o", "%s/bin/%s" % (IN_ROOT, name),
            "%s/src/%s.c" % (IN_ROOT, name), "%s/src/truth.c" % IN_ROOT])
        if ck.check("%s: %s compiled by the root's gcc" % (suite, name),
                    p.rc == 0, (p.out + p.err)[-3000:]):
            built[name] = os.path.join(bindir, name)
    return built


def mount_proc(root):
    """The root's /proc (fx_tuned re-executes /proc/self/exe).  Returns
    True when this test mounted it (and must unmount it)."""
    target = os.path.join(root, "proc")
    if os.path.ismount(target):
        return False
    os.makedirs(target, exist_ok=True)
    subprocess.run(["mount", "-t", "proc", "proc", target], check=True)
    return True


def take_core(suite, root, name, binary, workdir):
    """Run the fixture chrooted into the root until it stops; gcore it from
    here.  Returns a Snapshot (binary: the host path of the fixture)."""
    record_path = os.path.join(workdir, name + ".rec")
    in_root_record = "%s/%s.rec" % (IN_ROOT, name)
    host_record = os.path.join(root, in_root_record.lstrip("/"))
    core = os.path.join(workdir, name + ".core")
    for stale in (record_path, core, host_record):
        if os.path.exists(stale):
            os.unlink(stale)
    # the environment of test_glibc_truth's fixtures: nothing that tunes
    # malloc (fx_tuned sets its own)
    env = {"PATH": "/usr/bin:/bin", "HS_RECORD": in_root_record}

    def enter():
        os.chroot(root)
        os.chdir("/")
    with open(os.path.join(workdir, name + ".out"), "wb") as out:
        proc = subprocess.Popen(["%s/bin/%s" % (IN_ROOT, name)], env=env,
                                stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, preexec_fn=enter)
    try:
        hstest.wait_stopped(proc)
        hstest.gcore(proc.pid, os.path.join(workdir, name), core, name)
    finally:
        hstest.kill_process(proc)
    shutil.move(host_record, record_path)
    record = hstest.load_record(record_path, "record of %s in %s" % (name, suite))
    return hstest.Snapshot(name, binary, core, record, record_path)


def check_found(ck, label, snap, hidden):
    """Where info says the layouts and the symbols came from."""
    try:
        info = hstest.heapsift_cached("info", snap)
    except HsError as e:
        ck.check("%s: info runs" % label, False, str(e))
        return
    alloc = info.get("allocator") or {}
    how = {f.get("item"): f.get("how") for f in alloc.get("found") or []}
    if hidden:
        want = {"layouts": "layout_row", "main_arena": "disassembly",
                "mp_": "disassembly", "tcache": "disassembly"}
    else:
        want = {"layouts": "dwarf"}
    bad = ["%s found by %r, want %r" % (k, how.get(k), v)
           for k, v in sorted(want.items()) if how.get(k) != v]
    ck.case("%s: info: %s" % (label, ", ".join(
        "%s by %s" % kv for kv in sorted(want.items()))), bad)
    ck.check("%s: info: glibc %s" % (label, snap.record.get("glibc")),
             alloc.get("version") == snap.record.get("glibc"),
             "info says %r" % alloc.get("version"))


def run_suite(ck, suite, names, oracle_on):
    root = make_root(ck, suite)
    if not root:
        return
    workdir = os.path.join(hstest.WORKDIR, "roots", suite)
    os.makedirs(workdir, exist_ok=True)
    t0 = time.monotonic()
    built = build_fixtures(ck, suite, root, names)
    print("%s: %d fixtures compiled in %.0f s" % (suite, len(built),
                                                  time.monotonic() - t0))
    mounted = mount_proc(root)
    try:
        for name in names:
            if name not in built:
                continue
            failed_before = ck.failed
            label = "%s/%s" % (suite, name)
            try:
                snap = take_core(suite, root, name, built[name], workdir)
            except (HsError, OSError) as e:
                ck.check("%s: fixture ran in the root and was cored" % label,
                         False, str(e))
                continue
            snap.gdb_init = gdb_init(root)
            oracle = None
            if oracle_on:
                try:
                    oracle = hstest.gdb_oracle(snap)
                except HsError as e:
                    ck.check("%s: fixture oracle (gdb) ran" % label, False, str(e))
            snap.name = label
            truth.check_fixture(ck, snap, oracle)
            for hidden in (False, True):
                mode = snap_in_mode(snap, root, hidden)
                mode.name = "%s%s" % (label, "[no-debug]" if hidden else "")
                truth.check_heapsift(ck, mode, oracle)
                check_found(ck, mode.name, mode, hidden)
            # list, leaks, top, types, frag: the same JSON either way
            test_nodebug.test_same(label, snap.core,
                                   ("--exe", snap.binary, "--sysroot", root),
                                   ck.case)
            if ck.failed == failed_before and os.environ.get("HS_KEEP_CORES") != "1":
                os.unlink(snap.core)
    finally:
        if mounted:
            subprocess.run(["umount", os.path.join(root, "proc")])


def gdb_init(root):
    """gdb reads the core as the root's: its libraries, their debug info,
    and its libthread_db for the threads' TLS (the tcache pointers), which
    needs ld.so: bullseye's /lib64/ld-linux-x86-64.so.2 is an absolute
    symbolic link that the sysroot does not follow, so ld.so is also looked
    up by name in the root's library directory."""
    libdir = os.path.join(root, "lib", "x86_64-linux-gnu")
    return ("set sysroot " + root,
            "set debug-file-directory %s/usr/lib/debug" % root,
            "set auto-load safe-path /",
            "set libthread-db-search-path " + libdir,
            "set solib-search-path " + libdir)


def snap_in_mode(snap, root, hidden):
    extra = ["--sysroot", root] + (["--no-system-debug"] if hidden else [])
    s = hstest.Snapshot(snap.name, snap.binary, snap.core, snap.record,
                        snap.record_path, extra=extra)
    s.gdb_init = snap.gdb_init
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--no-oracle", action="store_true",
                    help="skip gdb (fixture sanity and chunk-by-chunk checks)")
    ap.add_argument("--suites", default=",".join(SUITES))
    ap.add_argument("fixtures", nargs="*", help="default: all of test_glibc_truth.py's")
    args = ap.parse_args()
    ck = hstest.Checker(quiet=not args.verbose)
    if os.geteuid() != 0:
        print("SKIP: needs root (chroot, mount)")
        ck.finish()
        return 0
    if not hstest.heapsift_available():
        ck.check("heapsift binary exists", False, hstest.HEAPSIFT)
        return ck.finish()
    names = (args.fixtures or (os.environ.get("HS_ROOTS_FIXTURES") or "").split()
             or truth.FIXTURES)
    for suite in [s for s in args.suites.split(",") if s]:
        t0 = time.monotonic()
        run_suite(ck, suite, names, not args.no_oracle)
        print("%s: done in %.0f s" % (suite, time.monotonic() - t0))
        sys.stdout.flush()
    return ck.finish()


if __name__ == "__main__":
    sys.exit(main())
