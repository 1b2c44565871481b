#!/usr/bin/env python3
"""heapsift on bad input: it must never crash, hang or trip a sanitizer.

Cases:
  - files that are not cores (not ELF, empty, missing, a directory, an
    executable, a core for the wrong class or machine): exit 1, one line;
  - usage errors: exit 2, one line;
  - a good core cut short at several points, and cores with hostile program
    headers: exit 1 with one line, or exit 0 with a "truncated" warning;
  - libc debug info hidden (a private mount namespace with a tmpfs over the
    debug directory): info exits 0 and explains how to get libc6-dbg for the
    libc build-id; list exits 1 with that one line;
  - allocator metadata corrupted by tests/corrupt_core.py (fastbin loop,
    tcache loop, impossible chunk sizes, main_arena.top out of range): exit 0
    with a warning naming the problem, and the allocations before the
    corruption still listed;
  - capstone missing (empty libcapstone.so.N files first in the library
    path): leaks --no-system-debug exits 1 with one line naming the file,
    info says why the allocator is unknown, and with libc's debug info
    leaks gives the same output as with capstone;
  - impossible thread ids (NT_PRSTATUS pr_pid 0, -1, 2^31-1, -2^31, another
    thread's) in the two-thread rc_stack core: leaks exits 0 with one
    warning naming the thread, and every thread's stack is still unwound
    (show names the frame of each thread that holds a block).

Standard library only.  Prints "N passed, M failed" last and exits 1 on any
failure.
"""

import json
import os
import re
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hstest  # noqa: E402
import corrupt_core as cc  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "bad_input")
TIMEOUT = int(os.environ.get("HS_TEST_TIMEOUT", "120"))

SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                     "runtime error:", "MemorySanitizer", "ThreadSanitizer")

R = hstest.Checker()


def hs(*args, env=None, wrapper=(), cwd=None):
    return hstest.run(list(wrapper) + [HS] + [str(a) for a in args], timeout=TIMEOUT, env=env,
                 cwd=cwd)


def stderr_lines(r):
    return [ln for ln in r.err.splitlines() if ln.strip()]


def basic_problems(r):
    """Problems every run is checked for: hang, crash, sanitizer report,
    stray stderr output."""
    probs = []
    if r.timed_out:
        probs.append("hung: killed after %ds (%s)" % (TIMEOUT, " ".join(r.argv)))
        return probs
    if r.rc < 0:
        probs.append("crashed: " + r.describe())
    for m in SANITIZER_MARKERS:
        if m in r.err:
            lines = r.err.splitlines()
            first = next(i for i, ln in enumerate(lines) if m in ln)
            report = "\n       ".join(ln.strip() for ln in lines[first:first + 12])
            probs.append("sanitizer report from %s (exit %s):\n       %s"
                         % (" ".join(r.argv), r.rc, report))
            break
    bad = [ln for ln in stderr_lines(r) if not ln.startswith("heapsift: ")]
    if bad and not probs:
        probs.append("stderr lines not starting with 'heapsift: ': %r" % bad[:3])
    return probs


def error_line(r):
    errs = [ln for ln in stderr_lines(r)
            if ln.startswith("heapsift: ") and not ln.startswith("heapsift: warning:")]
    return errs


def expect_error(r, rc, patterns=(), mention=None):
    """Exit rc with exactly one error line on stderr, matching every regex in
    patterns (case-insensitive) and containing `mention` if given."""
    probs = basic_problems(r)
    if probs:
        return probs
    if r.rc != rc:
        probs.append("exit %s, want %d: %s" % (r.rc, rc, r.describe()))
    errs = error_line(r)
    if len(errs) != 1:
        probs.append("want exactly one 'heapsift: ' error line on stderr, got %d: %r"
                     % (len(errs), r.err[:600]))
        return probs
    line = errs[0]
    for pat in patterns:
        if not re.search(pat, line, re.I):
            probs.append("error line %r does not match /%s/" % (line, pat))
    if mention and mention not in line:
        probs.append("error line %r does not mention %r" % (line, mention))
    return probs


def parse_json(r, probs):
    try:
        return json.loads(r.out)
    except ValueError as e:
        probs.append("stdout is not valid JSON (%s): %r" % (e, r.out[:300]))
        return None


def json_warnings(doc):
    w = doc.get("warnings") if isinstance(doc, dict) else None
    if not isinstance(w, list):
        return None
    return [x if isinstance(x, str) else json.dumps(x) for x in w]


def expect_error_or_warned(r, warn_patterns, json_out=True):
    """The rule for damaged cores: exit 1 with one error line, or exit 0 with
    a warning matching all warn_patterns (in JSON and on stderr).  Returns
    (problems, parsed JSON or None)."""
    probs = basic_problems(r)
    if probs:
        return probs, None
    if r.rc == 1:
        errs = error_line(r)
        if len(errs) != 1:
            probs.append("exit 1 but %d error lines on stderr: %r" % (len(errs), r.err[:600]))
        return probs, None
    if r.rc != 0:
        probs.append("exit %s, want 1 (error) or 0 (with warning): %s" % (r.rc, r.describe()))
        return probs, None
    doc = None
    if json_out:
        doc = parse_json(r, probs)
        if doc is None:
            return probs, None
        ws = json_warnings(doc)
        if ws is None:
            probs.append("JSON has no \"warnings\" array")
            return probs, doc
        if not any(all(re.search(p, w, re.I) for p in warn_patterns) for w in ws):
            probs.append("exit 0 but no JSON warning matches %s; warnings: %r"
                         % (warn_patterns, ws[:5]))
    warn_lines = [ln for ln in stderr_lines(r) if ln.startswith("heapsift: warning:")]
    if not any(all(re.search(p, ln, re.I) for p in warn_patterns) for ln in warn_lines):
        probs.append("exit 0 but no stderr warning matches %s; stderr: %r"
                     % (warn_patterns, r.err[:600]))
    return probs, doc


# ---------------------------------------------------------------------------
# Inputs that are not cores.

def write_file(name, data):
    path = os.path.join(WORK, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def patched_copy(src, name, patches):
    """Copy src and write (file_offset, bytes) patches into the copy."""
    dst = os.path.join(WORK, name)
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        for off, data in patches:
            f.seek(off)
            f.write(data)
    return dst


def truncated_copy(src, name, length):
    dst = os.path.join(WORK, name)
    with open(src, "rb") as f:
        data = f.read(length)
    with open(dst, "wb") as f:
        f.write(data)
    return dst


def test_not_cores(core):
    text = write_file("not-elf.txt", b"this is not a core file\n" * 200)
    empty = write_file("empty.core", b"")
    missing = os.path.join(WORK, "no-such-file.core")
    if os.path.exists(missing):
        os.unlink(missing)
    exe = os.path.realpath(shutil.which("true") or "/bin/true")
    magic = write_file("magic-only.core", b"\x7fELF" + bytes(range(256)) * 8)
    elf32 = patched_copy(core, "elfclass32.core", [(4, b"\x01")])
    arm = patched_copy(core, "aarch64.core", [(18, struct.pack("<H", 183))])

    for cmd in ("info", "list"):
        R.case("%s: not an ELF file" % cmd,
               expect_error(hs(cmd, text), 1, [r"ELF|core"]))
        R.case("%s: empty file" % cmd,
               expect_error(hs(cmd, empty), 1, [r"empty|ELF|core|truncat|short|small"]))
        R.case("%s: missing file" % cmd,
               expect_error(hs(cmd, missing), 1,
                            [r"no such file|not found|does not exist|cannot open|can't open"],
                            mention=missing))
        R.case("%s: a directory" % cmd,
               expect_error(hs(cmd, WORK), 1, [r"director|regular file|ELF|core|read"]))
        R.case("%s: an executable, not a core (%s)" % (cmd, exe),
               expect_error(hs(cmd, exe), 1, [r"core"]))
        R.case("%s: ELF magic followed by garbage" % cmd,
               expect_error(hs(cmd, magic), 1))
        R.case("%s: 32-bit ELF class" % cmd,
               expect_error(hs(cmd, elf32), 1, [r"64|class|ELF|unsupported|x86"]))
        R.case("%s: core for another machine (aarch64)" % cmd,
               expect_error(hs(cmd, arm), 1, [r"x86|machine|architecture|unsupported|aarch64"]))


# ---------------------------------------------------------------------------
# Usage errors.

def test_usage(core):
    cases = [
        ("unknown command", ["frobnicate", core], "frobnicate"),
        ("unknown option", ["info", "--bogus-option", core], "--bogus-option"),
        ("bad --state value", ["list", core, "--state", "sideways"], "sideways"),
        ("--state without a value", ["list", core, "--state"], "--state"),
        ("bad --format value", ["info", core, "--format", "xml"], "xml"),
        ("bad --min-size value", ["list", core, "--min-size", "lots"], "lots"),
        ("info without CORE", ["info"], None),
        ("list without CORE", ["list", "--state", "used"], None),
        ("two cores", ["info", core, core], None),
    ]
    for name, args, mention in cases:
        R.case("usage: " + name, expect_error(hs(*args), 2, mention=mention))
    test_option_parsing(core)
    test_help()


def expect_ok(r):
    """Exit 0 without an error line; returns (problems, JSON or None)."""
    probs = basic_problems(r)
    if not probs and r.rc != 0:
        probs.append("exit %s, want 0: %s" % (r.rc, r.describe()))
    if not probs and error_line(r):
        probs.append("error lines on stderr: %r" % error_line(r))
    doc = parse_json(r, probs) if not probs and r.out.lstrip().startswith("{") else None
    return probs, doc


def test_option_parsing(core):
    """Unknown short options inside a cluster, and "--" ending the options:
    a core whose name starts with '-' (run in WORK, where -x.core is a copy
    of the core)."""
    dash = os.path.join(WORK, "-x.core")
    shutil.copyfile(core, dash)
    hint = [r"'--'", r"\./-x\.core"]
    R.case("usage: unknown short option in a cluster: info -x.core",
           expect_error(hs("info", "-x.core", cwd=WORK), 2,
                        [r"unknown option '-x'"] + hint))
    R.case("usage: unknown short option after CORE: info CORE -q",
           expect_error(hs("info", core, "-q"), 2, [r"unknown option '-q'"]))
    R.case("usage: -n without its value at the end",
           expect_error(hs("top", core, "-n"), 2, [r"'-n' needs an argument"]))
    R.case("usage: an ambiguous long option (--s)",
           expect_error(hs("info", core, "--s"), 2, [r"ambiguous", r"--sysroot", r"--stats"],
                        mention="'--s'"))
    R.case("usage: a value for an option that takes none (--quiet=1)",
           expect_error(hs("info", core, "--quiet=1"), 2, [r"'--quiet' takes no value"]))

    r = hs("info", "--format", "json", "--", "-x.core", cwd=WORK)
    probs, doc = expect_ok(r)
    if doc is not None and (doc.get("core") or {}).get("path") != "-x.core":
        probs.append("core.path %r, want '-x.core'" % (doc.get("core") or {}).get("path"))
    elif not probs and doc is None:
        probs.append("no JSON on stdout: %r" % r.out[:200])
    R.case("--: info --format json -- -x.core opens the file -x.core", probs)
    R.case("--: what follows is positional even when it looks like an option",
           expect_error(hs("info", "--", "--bogus-file", cwd=WORK), 1,
                        [r"no such file|cannot open"], mention="--bogus-file"))
    R.case("--: options after it are arguments (info -- -x.core --quiet)",
           expect_error(hs("info", "--", "-x.core", "--quiet", cwd=WORK), 2,
                        [r"unexpected argument"], mention="--quiet"))
    R.case("--: a second -- after it is an argument (info -- -x.core --)",
           expect_error(hs("info", "--", "-x.core", "--", cwd=WORK), 2,
                        [r"unexpected argument '--'"]))
    r = hs("info", "--exe", "--", core, "--format", "json")
    probs, doc = expect_ok(r)
    if not probs and doc is None:
        probs.append("--format json after CORE was not read as an option: %r" % r.out[:200])
    R.case("--: the value of --exe is not the end of the options (--exe -- CORE --format json)",
           probs)
    rec_addr = None
    r = hs("list", core, "--format", "json")
    probs, doc = expect_ok(r)
    for a in (doc or {}).get("allocations", []):
        if a.get("state") == "used":
            rec_addr = a.get("address")
            break
    if rec_addr:
        r = hs("show", "--format", "json", "--", "-x.core", rec_addr, cwd=WORK)
        probs, doc = expect_ok(r)
        if not probs and doc is None:
            probs.append("no JSON on stdout: %r" % r.out[:200])
    else:
        probs = probs or ["no used allocation listed"]
    R.case("--: show -- -x.core ADDR (CORE and ADDR after it)", probs)
    r = hs("diff", "--format", "json", "--", "-x.core", core, cwd=WORK)
    probs, doc = expect_ok(r)
    if not probs and doc is None:
        probs.append("no JSON on stdout: %r" % r.out[:200])
    R.case("--: diff -- -x.core CORE (the cores of diff after it)", probs)


COMMANDS = ("info", "list", "leaks", "show", "top", "path", "dom", "types", "redact",
            "diff", "export", "report", "frag")


def test_help():
    """--version; a bare heapsift; help for one command, two ways."""
    r = hs("--version")
    R.case("--version: 'heapsift X.Y.Z' on stdout, exit 0",
           [] if r.rc == 0 and re.fullmatch(r"heapsift \d+\.\d+\.\d+\n", r.out)
           else ["exit %s, out %r" % (r.rc, r.out)])
    r = hs()
    probs = [] if r.rc == 2 and "usage: heapsift COMMAND" in r.err and "heapsift help" in r.err \
        and all(c in r.err for c in COMMANDS) else ["exit %s, err %r" % (r.rc, r.err[:300])]
    R.case("a bare heapsift: a short usage with every command, exit 2", probs)
    for c in COMMANDS:
        a, b = hs("help", c), hs(c, "--help")
        probs = []
        if a.rc != 0 or not a.out.startswith("usage: heapsift " + c):
            probs.append("help %s: exit %s, %r" % (c, a.rc, a.out[:120]))
        if b.rc != 0 or b.out != a.out:
            probs.append("%s --help differs from help %s" % (c, c))
        if "example:" not in a.out:
            probs.append("no example")
        R.case("help %s and %s --help: its usage, options and an example" % (c, c), probs)
    R.case("help of an unknown command: exit 2",
           expect_error(hs("help", "frobnicate"), 2, mention="frobnicate"))


# ---------------------------------------------------------------------------
# Truncated and hostile cores.

def allocations_by_address(doc):
    allocs = doc.get("allocations") if isinstance(doc, dict) else None
    if not isinstance(allocs, list):
        return None
    out = {}
    for a in allocs:
        try:
            out[int(a["address"], 16)] = a
        except (KeyError, TypeError, ValueError):
            pass
    return out


def expect_listed(doc, wanted, state="used"):
    """wanted: [(address, requested size)]; each must be listed with that
    state and a usable size of at least the request (and less than the
    request plus one alignment step and the size word)."""
    probs = []
    by_addr = allocations_by_address(doc)
    if by_addr is None:
        return ["JSON has no \"allocations\" array"]
    missing = [a for a, _ in wanted if a not in by_addr]
    if missing:
        probs.append("%d of %d expected allocations missing, first %#x"
                     % (len(missing), len(wanted), missing[0]))
    for addr, req in wanted:
        a = by_addr.get(addr)
        if a is None:
            continue
        if a.get("state") != state:
            probs.append("%#x: state %r, want %r" % (addr, a.get("state"), state))
            break
        size = a.get("size")
        if req is not None and (not isinstance(size, int) or not req <= size < req + 32):
            probs.append("%#x: size %r for a request of %d" % (addr, size, req))
            break
    return probs


def test_truncated(core, rec):
    ehdr, phdrs = cc.read_header(core)
    loads = [s for s in phdrs if s.type == cc.PT_LOAD and s.filesz > 0]
    note = cc.note_segment(core)
    mid_addr = rec["mid"][0][0]
    heap = cc.segment_of(loads, mid_addr)
    last = max(loads, key=lambda s: s.offset)
    size = os.path.getsize(core)
    data_end = max(s.offset + s.filesz for s in phdrs if s.type in (cc.PT_LOAD, cc.PT_NOTE))
    points = [
        ("inside the ELF header", 20),
        ("inside the program headers", ehdr["phoff"] + 56 * min(3, ehdr["phnum"] - 1) + 10),
        ("inside the notes", note.offset + note.filesz // 2),
        ("in the middle of the heap segment", heap.offset + heap.filesz // 2),
        ("just before the last segment", last.offset),
        # gcore puts the section headers last; cut the last byte of the data
        # the program headers describe instead.
        ("one byte short of the end of the last segment or note", data_end - 1),
    ]
    # Every live allocation sits in the first pages of the heap, well before
    # the middle of its segment.
    live = rec["before"] + rec["mid"] + rec["after"]
    for name, length in points:
        path = truncated_copy(core, "trunc-%d.core" % length, length)
        for cmd in ("info", "list"):
            args = [cmd, path, "--format", "json"] + (["--state", "all"] if cmd == "list" else [])
            probs, doc = expect_error_or_warned(hs(*args), [r"truncat"])
            if (not probs and doc is not None and cmd == "list"
                    and heap.offset + 0x4000 <= length):
                probs += expect_listed(doc, live)
            R.case("truncated %s (at %d of %d bytes): %s" % (name, length, size, cmd), probs)


def test_hostile_headers(core):
    ehdr, phdrs = cc.read_header(core)
    size = os.path.getsize(core)
    phoff = ehdr["phoff"]
    note_i = next(i for i, s in enumerate(phdrs) if s.type == cc.PT_NOTE)
    load_i = next(i for i, s in enumerate(phdrs) if s.type == cc.PT_LOAD and s.filesz > 0)
    note = phdrs[note_i]

    def ph_field(i, off, fmt, value):
        return (phoff + 56 * i + off, struct.pack(fmt, value))

    variants = [
        ("program headers past the end of the file",
         [(32, struct.pack("<Q", size + 4096))], True),
        ("e_phnum 65535",
         [(56, struct.pack("<H", 0xFFFF))], False),
        ("PT_NOTE larger than the file",
         [ph_field(note_i, 32, "<Q", 1 << 40)], False),
        ("PT_NOTE offset past the end of the file",
         [ph_field(note_i, 8, "<Q", size + (1 << 20))], False),
        ("PT_LOAD offset past the end of the file",
         [ph_field(load_i, 8, "<Q", 1 << 50)], False),
        ("PT_LOAD wrapping around the address space",
         [ph_field(load_i, 16, "<Q", 0xFFFFFFFFFFFFF000), ph_field(load_i, 40, "<Q", 1 << 32)],
         False),
        ("first note with a huge name size",
         [(note.offset, struct.pack("<I", 0xFFFFFFF0))], False),
        ("first note with a huge descriptor size",
         [(note.offset + 4, struct.pack("<I", 0xFFFFFFF0))], False),
    ]
    for i, (name, patches, must_fail) in enumerate(variants):
        path = patched_copy(core, "hostile-%d.core" % i, patches)
        for cmd in ("info", "list"):
            args = [cmd, path, "--format", "json"]
            r = hs(*args)
            if must_fail:
                probs = expect_error(r, 1)
            else:
                # Either refuse, or go on and say what was skipped.
                probs, _ = expect_error_or_warned(r, [r"."])
            R.case("hostile core, %s: %s" % (name, cmd), probs)


# ---------------------------------------------------------------------------
# Missing libc debug info.

def find_libc_module(doc):
    for m in doc.get("modules", []) if isinstance(doc, dict) else []:
        if isinstance(m, dict) and re.search(r"(^|/)libc[.-]", str(m.get("name", ""))):
            return m
    return None


def test_missing_debuginfo(core):
    name = "missing libc debug info"
    if os.geteuid() != 0 or not shutil.which("unshare"):
        R.skip(name, "needs root and unshare(1) for a private mount namespace")
        return
    r = hs("info", core, "--format", "json")
    probs = basic_problems(r)
    doc = parse_json(r, probs) if not probs else None
    if doc is None:
        R.case(name + ": info on the good core", probs or ["no JSON"])
        return
    libc = find_libc_module(doc)
    if libc is None:
        R.case(name + ": libc in info's modules", ["no libc module in %r"
                                                   % [m.get("name") for m in doc.get("modules", [])]])
        return
    build_id = str(libc.get("build_id", "")).lower()
    debug = libc.get("debug") if isinstance(libc.get("debug"), dict) else {}
    dpath = debug.get("path")
    probs = []
    if not re.fullmatch(r"[0-9a-f]{40}", build_id):
        probs.append("libc build_id %r is not 40 hex digits" % build_id)
    if not dpath:
        probs.append("info JSON gives no modules[].debug.path for libc: %r" % libc)
    R.case(name + ": info reports libc's build-id and debug file", probs)
    if probs:
        return

    # Hide the debug file: a tmpfs over its top directory, in a private
    # mount namespace that dies with the command.
    hide = ["/usr/lib/debug"]
    real = os.path.realpath(dpath)
    if not real.startswith("/usr/lib/debug/"):
        hide.append(os.path.dirname(real))
    libc_path = os.path.realpath(str(libc.get("name", "")))
    if real == libc_path:
        R.case(name, ["libc's debug info is in libc itself (%s); cannot hide it" % real])
        return
    script = "".join('mount -t tmpfs heapsift-test "%s" && ' % d for d in hide)
    script += 'exec "$@"'
    wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD")}

    probe = hstest.run(wrapper + ["test", "!", "-e", real], timeout=30, env=env)
    if probe.rc != 0:
        R.skip(name, "cannot hide %s in a private mount namespace: %s" % (real, probe.describe()))
        return

    # Without libc's DWARF the walk takes the release's row of
    # formats/gllayout.c and finds main_arena, mp_ and the tcache in libc's
    # code: info and list still read the heap, and info says how.
    base_alloc = doc.get("allocator", {})
    r = hs("info", core, "--format", "json", env=env, wrapper=wrapper)
    probs = basic_problems(r)
    if not probs:
        if r.rc != 0:
            probs.append("exit %s, want 0: %s" % (r.rc, r.describe()))
        else:
            d = parse_json(r, probs)
            if d is not None:
                a = d.get("allocator", {})
                how = {f.get("item"): f.get("how") for f in a.get("found", [])}
                if how.get("layouts") != "layout_row":
                    probs.append("layouts found by %r, want layout_row" % how.get("layouts"))
                for item in ("main_arena", "mp_", "tcache"):
                    if how.get(item) != "disassembly":
                        probs.append("%s found by %r, want disassembly" % (item, how.get(item)))
                if a.get("mallinfo2") != base_alloc.get("mallinfo2"):
                    probs.append("mallinfo2 %r, with debug info %r"
                                 % (a.get("mallinfo2"), base_alloc.get("mallinfo2")))
                m = find_libc_module(d)
                src = (m or {}).get("debug", {}) if isinstance((m or {}).get("debug"), dict) else {}
                if src.get("path") and os.path.realpath(src["path"]) == real:
                    probs.append("libc debug path still reported as %s" % real)
    R.case(name + ": info reads the heap from the layout row and libc's code", probs)

    r = hs("info", core, env=env, wrapper=wrapper)
    probs = basic_problems(r)
    if not probs:
        if r.rc != 0:
            probs.append("exit %s, want 0: %s" % (r.rc, r.describe()))
        elif "layout_row" not in r.out or "disassembly" not in r.out:
            probs.append("text output does not say how the heap was found")
    R.case(name + ": info (text) says how the heap was found", probs)

    for fmt in ("text", "json"):
        r = hs("list", core, "--format", fmt, env=env, wrapper=wrapper)
        probs = basic_problems(r)
        if not probs and r.rc != 0:
            probs.append("exit %s, want 0: %s" % (r.rc, r.describe()))
        R.case(name + ": list --format %s exits 0" % fmt, probs)


# ---------------------------------------------------------------------------
# Corrupted allocator metadata.

LOOP = r"loop|cycle|circular|repeat|revisit|duplicate"


def test_no_capstone(core):
    """capstone is loaded only by the fallbacks that disassemble (glibc
    without libc's debug info: --no-system-debug).  With a broken
    libcapstone first in the library path: leaks fails with one line
    naming the file, info says why the allocator is unknown, and with
    libc's debug info leaks gives the same output as without the broken
    library."""
    name = "capstone missing"
    bad = os.path.join(WORK, "badlib")
    os.makedirs(bad, exist_ok=True)
    # every major version a build may name (CS_API_MAJOR), each empty: the
    # loader says "file too short"
    for major in range(3, 7):
        with open(os.path.join(bad, "libcapstone.so.%d" % major), "w"):
            pass
    env = dict(os.environ, LD_LIBRARY_PATH=bad)
    r = hs("leaks", core, "--no-system-debug", env=env)
    R.case(name + ": leaks without libc's debug info",
           expect_error(r, 1, [r"capstone", re.escape(bad) + r"/libcapstone\.so\.\d"]))
    r = hs("info", core, "--no-system-debug", "--format", "json", env=env)
    probs, doc = expect_ok(r)
    if doc is not None:
        alloc = doc.get("allocator") or {}
        if alloc.get("name") is not None or bad not in str(alloc.get("error")):
            probs.append("allocator %r: want no name and an error naming %s" % (alloc, bad))
    elif not probs:
        probs.append("no JSON")
    R.case(name + ": info says why the allocator is unknown", probs)
    plain = hs("leaks", core, "--format", "json")
    r = hs("leaks", core, "--format", "json", env=env)
    probs, _ = expect_ok(r)
    if not probs and (r.out != plain.out or r.err != plain.err):
        probs.append("output differs from the run with capstone: %r against %r"
                     % (r.err[:300], plain.err[:300]))
    R.case(name + ": leaks with libc's debug info needs no capstone", probs)


def test_control(core, rec):
    """The uncorrupted core: everything the fixture recorded is listed."""
    r = hs("list", core, "--state", "all", "--format", "json")
    probs = basic_problems(r)
    if not probs and r.rc != 0:
        probs.append("exit %s, want 0: %s" % (r.rc, r.describe()))
    doc = parse_json(r, probs) if not probs else None
    if doc is not None:
        probs += expect_listed(doc, rec["before"] + rec["mid"] + rec["after"] + rec["guard"])
        by_addr = allocations_by_address(doc) or {}
        for key, where in (("tcache", "tcache"), ("tcache_fill", "tcache"),
                           ("fastbin", "fastbin"), ("unsorted", "bin")):
            for addr in rec[key]:
                a = by_addr.get(addr)
                if a is None:
                    probs.append("free %s chunk %#x not listed" % (key, addr))
                elif a.get("state") != "free" or a.get("where") != where:
                    probs.append("%#x: state %r where %r, want free/%s"
                                 % (addr, a.get("state"), a.get("where"), where))
                    break
        ws = json_warnings(doc)
        if ws:
            probs.append("warnings on the good core: %r" % ws[:3])
    R.case("corrupted metadata: control (uncorrupted core) lists everything", probs)
    return not probs


def test_corrupted(core, rec):
    live = rec["before"] + rec["mid"] + rec["after"]
    mid_chunk = rec["mid"][0][0] - 16
    addr_pat = "0x0*(%x|%x)" % (mid_chunk, mid_chunk + 16)
    cases = [
        ("fastbin-loop", "a loop in a fastbin list", [r"fastbin", LOOP], live),
        ("tcache-loop", "a loop in a tcache list", [r"tcache", LOOP], live),
        ("fastbin-wild", "a fastbin pointer to unmapped memory", [r"fastbin"], live),
        ("tcache-wild", "a tcache pointer to unmapped memory", [r"tcache"], live),
        ("huge-size", "an impossible chunk size in the middle of the heap",
         [r"size|chunk", addr_pat], rec["before"]),
        ("zero-size", "a zero chunk size in the middle of the heap",
         [r"size|chunk", addr_pat], rec["before"]),
        ("wild-top", "main_arena.top out of range", [r"\btop\b"], rec["before"]),
    ]
    for recipe, what, warn, wanted in cases:
        path = os.path.join(WORK, "corrupt-%s.core" % recipe)
        try:
            cc.make_corrupt(core, path, rec, recipe)
        except cc.CoreError as e:
            R.case("corrupted metadata: %s: generator" % what, [str(e)])
            continue
        r = hs("list", path, "--state", "all", "--format", "json")
        probs = basic_problems(r)
        if not probs and r.rc != 0:
            probs.append("exit %s, want 0 with a warning: %s" % (r.rc, r.describe()))
        if not probs:
            p2, doc = expect_error_or_warned(r, warn)
            probs += p2
            if doc is not None:
                probs += expect_listed(doc, wanted)
        R.case("corrupted metadata: %s: list" % what, probs)

        r = hs("list", path, "--state", "all")
        probs = basic_problems(r)
        if not probs and r.rc != 0:
            probs.append("exit %s, want 0 with a warning: %s" % (r.rc, r.describe()))
        if not probs:
            probs += expect_error_or_warned(r, warn, json_out=False)[0]
        R.case("corrupted metadata: %s: list (text)" % what, probs)

        r = hs("info", path, "--format", "json")
        probs = basic_problems(r)
        if not probs and r.rc != 0:
            probs.append("exit %s, want 0: %s" % (r.rc, r.describe()))
        if not probs:
            parse_json(r, probs)
        R.case("corrupted metadata: %s: info" % what, probs)

        if recipe in ("huge-size", "zero-size"):
            check_partial_verdict(path, what)


def check_partial_verdict(path, what):
    """A walk cut short in the middle of the heap: leaks and top say so on
    their first line, with the bytes glibc's system_mem counts that the
    walk could not account for, and JSON says partial with that figure."""
    for cmd in ("leaks", "top"):
        probs = []
        r = hs(cmd, path, "--format", "json")
        doc = parse_json(r, probs) if r.rc == 0 else None
        if r.rc != 0:
            probs.append("exit %s: %s" % (r.rc, r.describe()))
        elif doc is not None:
            miss = doc.get("unaccounted_bytes")
            if doc.get("partial") is not True or not isinstance(miss, int) or miss <= 0:
                probs.append("partial %r, unaccounted_bytes %r" % (doc.get("partial"), miss))
        r = hs(cmd, path)
        first = r.out.splitlines()[0] if r.out else ""
        if not re.match(r"PARTIAL: .*could not account for [0-9.]+ [KMG]?i?B", first):
            probs.append("first line %r" % first)
        R.case("corrupted metadata: %s: %s says partial first, with the missing bytes"
               % (what, cmd), probs)


# ---------------------------------------------------------------------------
# Impossible thread ids.

TID_WARN = r"impossible thread id"


def frame_held(rec):
    """[(address, thread number, function)]: for each thread of the rc_stack
    record, the shallowest and the deepest block of its recursion
    (deep_holder, worker_holder), each held by one frame only."""
    by_thread = {}
    for a in rec.get("allocations", []):
        frames = [h for h in a.get("holders", []) if h.get("kind") == "frame"]
        if (len(frames) == 1 and a.get("expect") == "reachable"
                and str(frames[0].get("name")).endswith("_holder")):
            by_thread.setdefault(a["thread"], []).append(
                (int(a["address"], 16), a["thread"] + 1, frames[0]["name"]))
    out = []
    for t in sorted(by_thread):
        blocks = by_thread[t]
        out += [blocks[0], blocks[-1]] if len(blocks) > 1 else blocks
    return out


def check_frames(path, blocks):
    """Each block's holder is a frame of its own thread, named for the
    function: that thread was unwound."""
    probs = []
    for addr, thread, func in blocks:
        r = hs("show", path, "%#x" % addr, "--format", "json")
        p = basic_problems(r)
        if not p and r.rc != 0:
            p.append("exit %s, want 0: %s" % (r.rc, r.describe()))
        doc = parse_json(r, p) if not p else None
        if doc is not None:
            roots = [x.get("root", "") for x in doc.get("pointed_by", [])
                     if isinstance(x, dict)]
            pat = r"^thread %d \(tid -?\d+\) frame #\d+ %s\b" % (thread, re.escape(func))
            if not any(re.search(pat, str(x)) for x in roots):
                p.append("%#x: held by %r, want a root matching /%s/" % (addr, roots, pat))
        probs += p
    return probs


def test_thread_ids():
    try:
        snap = hstest.take_core("rc_stack", WORK)
        core = snap.core
        with open(snap.record_path) as f:
            rec = json.load(f)
        tids = [tid for _, tid in cc.prstatus_pids(core)]
    except (hstest.HsError, OSError, ValueError, cc.CoreError) as e:
        R.case("impossible thread ids: take the rc_stack core", [str(e)])
        return
    blocks = frame_held(rec)
    if len(tids) != 2 or len({t for _, t, _ in blocks}) != 2:
        R.case("impossible thread ids: the rc_stack core",
               ["want 2 threads with frame-held blocks, got %d NT_PRSTATUS notes and %r"
                % (len(tids), blocks)])
        return

    def leaks_case(path, warn):
        r = hs("leaks", path, "--format", "json")
        probs = basic_problems(r)
        if not probs and r.rc != 0:
            probs.append("exit %s, want 0: %s" % (r.rc, r.describe()))
        if probs:
            return probs
        doc = parse_json(r, probs)
        if doc is None:
            return probs
        roots = doc.get("roots") if isinstance(doc.get("roots"), dict) else {}
        if roots.get("stacks_unwound") is not True:
            probs.append("roots.stacks_unwound is %r, want true" % roots.get("stacks_unwound"))
        said = [ln for ln in stderr_lines(r) if re.search(TID_WARN, ln, re.I)]
        if warn is None:
            if said:
                probs.append("warns about thread ids: %r" % said)
            return probs
        probs += expect_error_or_warned(r, warn)[0]
        if len(said) != 1:
            probs.append("want the thread id warning once on stderr, got %d: %r"
                         % (len(said), said))
        return probs

    R.case("impossible thread ids: control (uncorrupted core): leaks",
           leaks_case(core, None))
    R.case("impossible thread ids: control: each thread's frames",
           check_frames(core, blocks))

    # The core itself is patched for each variant, and restored.
    path = core
    variants = [
        ("pr_pid 0 in the first thread", {1: 0}),
        ("pr_pid -1 in the second thread", {2: -1}),
        ("pr_pid 2^31-1 in the first thread", {1: 0x7FFFFFFF}),
        ("pr_pid -2^31 in the second thread", {2: -0x80000000}),
        ("the second thread's pr_pid equal to the first's", {2: tids[0]}),
        ("pr_pid 0 in every thread", {1: 0, 2: 0}),
    ]
    for name, values in variants:
        old = cc.set_pr_pids(path, values)
        try:
            n = min(values)
            warn = [TID_WARN, r"pr_pid", r"\bthread %d has %d\b" % (n, values[n])]
            R.case("impossible thread ids, %s: leaks" % name, leaks_case(path, warn))
            R.case("impossible thread ids, %s: each thread's frames" % name,
                   check_frames(path, blocks))
        finally:
            cc.set_pr_pids(path, old)


# ---------------------------------------------------------------------------

def main():
    if not os.access(HS, os.X_OK):
        print("heapsift binary not found at %s" % HS)
        R.case("heapsift exists", ["not found: %s" % HS])
        return R.finish()
    os.makedirs(WORK, exist_ok=True)
    try:
        snap = hstest.take_core("corruptme", WORK)
        core = snap.core
        rec = cc.parse_record(snap.record_path)
    except (hstest.HsError, OSError, cc.CoreError) as e:
        R.case("take the corruptme core", [str(e)])
        return R.finish()

    test_usage(core)
    test_not_cores(core)
    test_truncated(core, rec)
    test_hostile_headers(core)
    test_missing_debuginfo(core)
    test_no_capstone(core)
    test_control(core, rec)
    test_corrupted(core, rec)
    test_thread_ids()
    status = R.finish()
    if status == 0:
        shutil.rmtree(WORK, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
