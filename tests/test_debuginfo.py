#!/usr/bin/env python3
"""Where heapsift finds files and debug info, and what it says when it cannot.

  - the default search: libc's DWARF from /usr/lib/debug/.build-id;
  - --debug-dir DIR: with /usr/lib/debug hidden (a tmpfs over it in a private
    mount namespace), DIR/.build-id/xx/yyyy.debug is used, and the heap reads
    the same as with the system's debug info;
  - debuginfod: with /usr/lib/debug hidden and DEBUGINFOD_URLS pointing at a
    debuginfod server on loopback that serves libc's debug file, the file is
    fetched and the heap reads the same;
  - the executable moved away: a warning that names its build-id, then --exe
    and --sysroot find it.

Standard library only; prints "N passed, M failed" last.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "debuginfo")
R = hstest.Checker()


def hs(*args, env=None, hide_debug=False):
    argv = [HS] + [str(a) for a in args]
    if hide_debug:
        # a private mount namespace where /usr/lib/debug is an empty tmpfs
        argv = ["unshare", "-m", "sh", "-c",
                'mount -t tmpfs none /usr/lib/debug && exec "$@"', "sh"] + argv
    return hstest.run(argv, timeout=120, env=env)


def info_json(*args, **kw):
    r = hs("info", *args, "--format", "json", **kw)
    if r.rc != 0:
        return None, "exit %d: %s" % (r.rc, r.err.strip())
    try:
        return json.loads(r.out), None
    except ValueError as e:
        return None, "bad JSON: %s" % e


def module(info, prefix):
    for m in info.get("modules", []):
        if os.path.basename(m["name"]).startswith(prefix):
            return m
    return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def can_hide_debug():
    r = hstest.run(["unshare", "-m", "sh", "-c",
               "mount -t tmpfs none /usr/lib/debug && test ! -e /usr/lib/debug/.build-id"],
              timeout=30)
    return r.rc == 0


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    binary = os.path.join(hstest.FIXTURES, "corruptme")
    core = hstest.take_core(binary, WORK, "plain").core

    base, err = info_json(core)
    if not base:
        R.case("default search", [err])
        return R.finish()
    libc = module(base, "libc.so")
    problems = []
    if not libc:
        problems.append("no libc module in %s" % [m["name"] for m in base["modules"]])
    elif libc["debug"]["source"] != "build-id" or not libc["debug"]["path"]:
        problems.append("libc debug info: %s" % libc["debug"])
    if base["allocator"].get("name") != "glibc":
        problems.append("allocator: %s" % base["allocator"])
    R.case("default search: libc's DWARF from /usr/lib/debug/.build-id", problems)
    if problems:
        return R.finish()
    mallinfo = base["allocator"]["mallinfo2"]
    build_id = libc["build_id"]
    debug_file = libc["debug"]["path"]

    if not can_hide_debug():
        R.skip("--debug-dir and debuginfod", "cannot hide /usr/lib/debug (needs root and unshare)")
        return R.finish()

    # --debug-dir
    ddir = os.path.join(WORK, "dbg")
    dst = os.path.join(ddir, ".build-id", build_id[:2], build_id[2:] + ".debug")
    os.makedirs(os.path.dirname(dst))
    shutil.copy(debug_file, dst)
    info, err = info_json(core, "--debug-dir", ddir, hide_debug=True)
    problems = [err] if err else []
    if info:
        m = module(info, "libc.so")
        if m["debug"]["source"] != "debug-dir" or m["debug"]["path"] != dst:
            problems.append("libc debug info: %s (expected debug-dir %s)" % (m["debug"], dst))
        if info["allocator"].get("mallinfo2") != mallinfo:
            problems.append("mallinfo2 %s differs from %s" % (info["allocator"].get("mallinfo2"), mallinfo))
    R.case("--debug-dir: libc's DWARF from DIR/.build-id, same heap", problems)

    # hidden and no --debug-dir: the allocator error names the build-id
    info, err = info_json(core, hide_debug=True, env=dict(os.environ, DEBUGINFOD_URLS=""))
    problems = [err] if err else []
    if info:
        a = info["allocator"]
        how = {f.get("item"): f.get("how") for f in a.get("found", [])}
        if how.get("layouts") != "layout_row":
            problems.append("layouts found by %r, want layout_row: %r" % (how.get("layouts"), a.get("error")))
        if a.get("mallinfo2") != mallinfo:
            problems.append("mallinfo2 %s differs from %s" % (a.get("mallinfo2"), mallinfo))
    R.case("no debug info: the heap from the layout row and libc's code, same mallinfo2", problems)

    # debuginfod
    server = shutil.which("debuginfod")
    if not server:
        R.skip("debuginfod", "no debuginfod server installed (Debian package debuginfod)")
        return R.finish()
    sdir = os.path.join(WORK, "served")
    os.makedirs(sdir)
    shutil.copy(debug_file, os.path.join(sdir, "libc.debug"))
    port = free_port()
    log = open(os.path.join(WORK, "debuginfod.log"), "w")
    proc = subprocess.Popen([server, "-p", str(port), "-F", sdir,
                             "-d", os.path.join(WORK, "debuginfod.sqlite")],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        url = "http://127.0.0.1:%d" % port
        deadline = time.time() + 60
        ready = False
        while time.time() < deadline and not ready:
            try:
                with urllib.request.urlopen("%s/buildid/%s/debuginfo" % (url, build_id),
                                            timeout=5) as resp:
                    ready = resp.status == 200
            except Exception:
                time.sleep(0.5)
        if not ready:
            R.case("debuginfod: server on loopback serves libc's debug file",
                   ["debuginfod did not serve %s within 60 s" % build_id])
            return R.finish()
        cache = os.path.join(WORK, "dcache")
        env = dict(os.environ, DEBUGINFOD_URLS=url, DEBUGINFOD_CACHE_PATH=cache)
        info, err = info_json(core, hide_debug=True, env=env)
        problems = [err] if err else []
        if info:
            m = module(info, "libc.so")
            want = os.path.join(cache, build_id, "debuginfo")
            if m["debug"]["source"] != "debuginfod" or m["debug"]["path"] != want:
                problems.append("libc debug info: %s (expected debuginfod %s)" % (m["debug"], want))
            if info["allocator"].get("mallinfo2") != mallinfo:
                problems.append("mallinfo2 %s differs from %s" % (info["allocator"].get("mallinfo2"), mallinfo))
        R.case("debuginfod: libc's DWARF fetched from a server, same heap", problems)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()

    # the executable moved away
    moved_dir = os.path.join(WORK, "moved")
    os.makedirs(moved_dir)
    exe = os.path.join(moved_dir, "corruptme")
    shutil.copy(binary, exe)
    core2 = hstest.take_core(exe, WORK, "moved").core
    sysroot = os.path.join(WORK, "sysroot")
    os.makedirs(sysroot + moved_dir)
    shutil.move(exe, sysroot + exe)
    info, err = info_json(core2)
    problems = [err] if err else []
    if info:
        m = [x for x in info["modules"] if x["executable"]]
        if len(m) != 1 or m[0]["file"] is not None:
            problems.append("executable module: %s" % m)
        elif not any("executable" in w and m[0]["build_id"] in w and "--exe" in w
                     for w in info["warnings"]):
            problems.append("no warning naming the build-id and --exe: %s" % info["warnings"])
    R.case("executable gone: a warning names its build-id and --exe", problems)
    for how, args in (("--exe", ["--exe", sysroot + exe]), ("--sysroot", ["--sysroot", sysroot])):
        info, err = info_json(core2, *args)
        problems = [err] if err else []
        if info:
            m = [x for x in info["modules"] if x["executable"]]
            if len(m) != 1 or m[0]["file"] != sysroot + exe or m[0]["debug"]["source"] != "self":
                problems.append("executable module: %s" % m)
            if info["warnings"]:
                problems.append("warnings: %s" % info["warnings"])
        R.case("executable gone: %s finds it" % how, problems)
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
