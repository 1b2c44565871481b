#!/usr/bin/env python3
"""What a hostile core's strings may do to heapsift's output: nothing.

The corruptme fixture's core is patched in its notes, each field keeping its
length so the notes stay valid:
  - NT_PRPSINFO pr_fname and pr_psargs: OSC and CSI sequences (retitle,
    clear the screen), C1 controls, a lone 0xff, a truncated sequence, an
    overlong, a surrogate, a code point past U+10FFFF, DEL, CR, and
    "</b>"/"&" for the HTML page;
  - the executable's path in NT_FILE: the same kind of bytes (the module is
    then not found: its name shows up in the modules, in a warning, and in
    the names of the roots in its writable mapping).

Then info, list, leaks, top, types, frag, show, path, dom, diff (text and
JSON), report -o and export --pprof/--folded run on it:
  - JSON decodes as strict UTF-8 and parses; the patched strings come back
    as Python's decode("utf-8", "replace") of the bytes (invalid bytes are
    U+FFFD, cut at maximal subparts);
  - text on stdout and stderr, the folded stacks and pprof's strings are
    strict UTF-8 with no byte below 0x20 but \\n and \\t, no DEL and no C1
    control, and show the escaped forms (\\x1b]0;pwn\\x07 ...), computed
    here from the definition of the text policy;
  - the HTML page's embedded JSON has no raw < > &.
Also: a core path on the command line that is not UTF-8 (a symlink named
with 0xff) in JSON and text, a missing one and a command-line argument with
ESC in an error line; and a core whose names are valid UTF-8 (é, €, an
emoji): shown unchanged in text and in JSON, and nothing escaped for the
unpatched core.

Standard library only.  Prints "N passed, M failed" last and exits 1 on any
failure.
"""

import codecs
import gzip
import json
import os
import shutil
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hstest  # noqa: E402
import corrupt_core as cc  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "escaping")
TIMEOUT = int(os.environ.get("HS_TEST_TIMEOUT", "120"))
SANITIZER_MARKERS = (b"AddressSanitizer", b"LeakSanitizer", b"UndefinedBehaviorSanitizer",
                     b"runtime error:")

R = hstest.Checker()

NT_PRPSINFO = 3
NT_FILE = 0x46494C45

# 16 bytes (pr_fname[16]; heapsift reads all 16).
FNAME = b"\x1b]0;pwn\x07</b>\xc2\x9b\xff&"
# at most 79 bytes (pr_psargs[80])
PSARGS = (b"run \x1b[2J \x1b]0;pwned\x07 \xc2\x85 \xff \xe2\x82 \xc0\xaf \xed\xa0\x80 "
          b"\xf4\x90\x80\x80 caf\xc3\xa9 \\x41 \x7f\r")
# replaces the end of the executable's path (no '/', no NUL)
EXE_TAIL = b"\x1b]0;pwn\x07\x1b[2J\xc2\x85\xff\xe2\x82Z"

# valid UTF-8, for the names that must come out unchanged
FNAME_OK = b"caf\xc3\xa9-\xe2\x82\xac"
PSARGS_OK = b"run \xf0\x9f\x98\x80 na\xc3\xafve \xe2\x82\xac \\x41"
EXE_TAIL_OK = b"h\xc3\xa9h\xc3\xa9-\xf0\x9f\x98\x80"


# ---------------------------------------------------------------------------
# The text policy, from its definition (src/escape.h), as the oracle: an
# ill-formed sequence (Python's decoder reports it at its maximal subpart)
# becomes \xNN per byte, and so do C0 controls but \n and \t, DEL and C1
# controls.

def _hex_bytes(err):
    return "".join("\\x%02x" % b for b in err.object[err.start:err.end]), err.end


codecs.register_error("heapsift-test-hex", _hex_bytes)


def text_policy(data):
    out = []
    for ch in data.decode("utf-8", "heapsift-test-hex"):
        o = ord(ch)
        if (o < 0x20 and ch not in "\n\t") or o == 0x7F or 0x80 <= o <= 0x9F:
            out.append("".join("\\x%02x" % b for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "".join(out).encode("utf-8")


def json_policy(data):
    return data.decode("utf-8", "replace")


# ---------------------------------------------------------------------------
# Running heapsift with bytes in and out.

def hs(*args):
    argv = [os.fsencode(HS)] + [a if isinstance(a, bytes) else os.fsencode(str(a))
                                for a in args]
    return hstest.run(argv, timeout=TIMEOUT, text=False)


def shown_safely(what, data):
    """Problems with text meant for a terminal: not strict UTF-8, a control
    byte other than \\n and \\t, DEL, a C1 control."""
    probs = []
    bad = sorted({b for b in data if (b < 0x20 and b not in (9, 10)) or b == 0x7F})
    if bad:
        i = min(data.index(bytes([b])) for b in bad)
        probs.append("%s: raw control bytes %s, first in %r"
                     % (what, ["%#x" % b for b in bad], data[max(0, i - 40):i + 40]))
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError as e:
        probs.append("%s: not UTF-8 (%s): %r" % (what, e, data[max(0, e.start - 40):e.start + 40]))
        return probs
    c1 = sorted({"U+%04X" % ord(c) for c in s if 0x80 <= ord(c) <= 0x9F})
    if c1:
        probs.append("%s: C1 controls %s" % (what, c1))
    return probs


def basic(r, rc=0):
    if r.timed_out:
        return ["hung: " + r.describe()]
    probs = []
    if r.rc is None or r.rc < 0:
        probs.append("crashed: " + r.describe())
    for m in SANITIZER_MARKERS:
        if m in r.err:
            probs.append("sanitizer report: " + r.describe())
            return probs
    if r.rc != rc:
        probs.append("exit %s, want %d: %s" % (r.rc, rc, r.describe()))
    bad = [ln for ln in r.err.splitlines() if ln.strip() and not ln.startswith(b"heapsift: ")]
    if bad:
        probs.append("stderr lines not starting with 'heapsift: ': %r" % bad[:3])
    probs += shown_safely("stderr", r.err)
    return probs


def parse_json(r, probs):
    try:
        return json.loads(r.out.decode("utf-8", "strict"))
    except (UnicodeDecodeError, ValueError) as e:
        probs.append("stdout is not strict UTF-8 JSON (%s): %r" % (e, r.out[:300]))
        return None


def strings_of(doc):
    """Every string value in a JSON document."""
    out = []
    stack = [doc]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return out


def expect_in(what, needle, hay):
    return [] if needle in hay else ["%s: %r not found" % (what, needle)]


def expect_json_string(doc, want, exact=True):
    ss = strings_of(doc)
    if any((s == want) if exact else (want in s) for s in ss):
        return []
    return ["no JSON string %s %r" % ("equal to" if exact else "containing", want)]


# ---------------------------------------------------------------------------
# The patched cores.

def notes(path):
    """[(type, file offset of the descriptor, descriptor)]"""
    seg = cc.note_segment(path)
    with open(path, "rb") as f:
        f.seek(seg.offset)
        data = f.read(seg.filesz)
    out, off = [], 0
    while off + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, off)
        desc = off + 12 + ((namesz + 3) & ~3)
        out.append((ntype, seg.offset + desc, data[desc:desc + descsz]))
        off = desc + ((descsz + 3) & ~3)
    return out


def patch_core(src, dst, fname, psargs, exe_tail):
    """A copy of src with pr_fname, pr_psargs and the end of the executable's
    NT_FILE path replaced (same lengths).  Returns the new path."""
    assert len(fname) <= 16 and len(psargs) < 80
    with open(src, "rb") as f:
        data = bytearray(f.read())
    exe_new = None
    for ntype, off, desc in notes(src):
        if ntype == NT_PRPSINFO:
            data[off + 40:off + 56] = fname.ljust(16, b"\0")
            data[off + 56:off + 136] = psargs.ljust(80, b"\0")
        elif ntype == NT_FILE:
            count = struct.unpack_from("<Q", desc, 0)[0]
            start = 16 + 24 * count
            paths = desc[start:].split(b"\0")[:count]
            exe = next(p for p in paths if p.endswith(b"/corruptme"))
            if len(exe) <= len(exe_tail) + 1:
                raise cc.CoreError("executable path %r too short to patch" % exe)
            exe_new = exe[:-len(exe_tail)] + exe_tail
            table = desc[start:].replace(exe + b"\0", exe_new + b"\0")
            data[off + start:off + start + len(table)] = table
    if exe_new is None:
        raise cc.CoreError("no NT_FILE note in %s" % src)
    with open(dst, "wb") as f:
        f.write(data)
    return exe_new


# ---------------------------------------------------------------------------

COMMANDS = ["info", "list", "leaks", "leaks --list", "top", "types", "frag",
            "show ADDR", "path ADDR", "dom ADDR"]


def args_of(cmd, core, addr):
    return [a if a != "ADDR" else addr for a in cmd.split()[:1] + [core] + cmd.split()[1:]]


def test_hostile(core, exe, addr):
    base = exe[exe.rindex(b"/") + 1:]
    esc_exe, esc_base = text_policy(exe), text_policy(base)
    for cmd in COMMANDS:
        args = args_of(cmd, core, addr)
        # text
        r = hs(*args)
        probs = basic(r)
        if not probs:
            probs += shown_safely("stdout", r.out)
            probs += expect_in("stderr (the missing executable's warning)", esc_exe, r.err)
            if cmd == "info":
                for b in (FNAME, PSARGS, exe):
                    probs += expect_in("stdout", text_policy(b), r.out)
                probs += expect_in("stdout", b"\\x1b]0;pwn\\x07", r.out)
            if cmd.split()[0] in ("top", "show", "path", "dom"):
                probs += expect_in("stdout (a root in the executable's data)", esc_base, r.out)
        R.case("hostile core: %s (text)" % cmd, probs)
        # JSON
        r = hs(*(args + ["--format", "json"]))
        probs = basic(r)
        doc = parse_json(r, probs) if not probs else None
        if doc is not None:
            # the commands that report warnings in JSON
            ws = doc.get("warnings") if isinstance(doc, dict) else None
            if ws is not None and not any(json_policy(exe) in w for w in ws
                                          if isinstance(w, str)):
                probs.append("no JSON warning naming %r: %r" % (json_policy(exe), ws))
            if cmd == "info":
                for b in (FNAME, PSARGS, exe):
                    probs += expect_json_string(doc, json_policy(b))
            if cmd.split()[0] in ("top", "show", "path", "dom"):
                probs += expect_json_string(doc, json_policy(base), exact=False)
        R.case("hostile core: %s --format json" % cmd, probs)

    for fmt in ("text", "json"):
        r = hs("diff", core, core, "--format", fmt)
        probs = basic(r)
        if not probs:
            if fmt == "text":
                probs += shown_safely("stdout", r.out)
            else:
                parse_json(r, probs)
        R.case("hostile core: diff (%s)" % fmt, probs)


def test_files(core, exe):
    base = exe[exe.rindex(b"/") + 1:]
    # the HTML report
    html = os.path.join(WORK, "report.html")
    r = hs("report", core, "-o", html)
    probs = basic(r)
    if not probs:
        with open(html, "rb") as f:
            page = f.read()
        probs += shown_safely(html, page)
        start = page.find(b'<script id="data" type="application/json">')
        end = page.find(b"</script>", start)
        if start < 0 or end < 0:
            probs.append("no embedded JSON in the page")
        else:
            data = page[start + len(b'<script id="data" type="application/json">'):end]
            raw = sorted({chr(c) for c in data if c in b"<>&"})
            if raw:
                probs.append("raw %s in the page's JSON" % raw)
            try:
                doc = json.loads(data.decode("utf-8", "strict"))
                probs += expect_json_string(doc, json_policy(FNAME))
                probs += expect_json_string(doc, json_policy(base), exact=False)
            except (UnicodeDecodeError, ValueError) as e:
                probs.append("the page's JSON does not parse: %s" % e)
    R.case("hostile core: report -o (HTML page)", probs)

    # export: pprof and folded stacks
    pb = os.path.join(WORK, "out.pb.gz")
    folded = os.path.join(WORK, "out.folded")
    r = hs("export", core, "--pprof", pb, "--folded", folded)
    probs = basic(r)
    if not probs:
        with open(folded, "rb") as f:
            text = f.read()
        probs += shown_safely(folded, text)
        probs += expect_in(folded, text_policy(base).replace(b";", b":"), text)
    R.case("hostile core: export --folded", probs)
    probs = basic(r)
    if not probs:
        try:
            with gzip.open(pb, "rb") as f:
                strings = pprof_strings(f.read())
        except (OSError, ValueError) as e:
            strings = []
            probs.append("cannot read %s: %s" % (pb, e))
        for s in strings:
            probs += shown_safely("pprof string %r" % s[:60], s)
        if strings and not any(text_policy(base) in s for s in strings):
            probs.append("no pprof string holds %r" % text_policy(base))
    R.case("hostile core: export --pprof (string table)", probs)
    if not shutil.which("go"):
        R.skip("hostile core: go tool pprof reads the profile",
               "no go toolchain (Debian package golang-go)")
        return
    env = dict(os.environ, GOCACHE=os.path.join(WORK, "gocache"), HOME=WORK)
    r = hstest.run(["go", "tool", "pprof", "-top", "-nodecount=1000", pb], timeout=300, env=env)
    probs = []
    if r.rc != 0:
        probs.append("go tool pprof failed: %s" % r.describe())
    elif text_policy(base).decode("utf-8") not in r.out:
        probs.append("go tool pprof -top does not show %r: %r"
                     % (text_policy(base), r.out[-600:]))
    R.case("hostile core: go tool pprof reads the profile", probs)


def varint(buf, i):
    v = shift = 0
    while True:
        if i >= len(buf):
            raise ValueError("varint past the end")
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def pprof_strings(buf):
    """Profile.string_table (field 6) of a profile.proto message."""
    out, i = [], 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            if field == 6:
                out.append(bytes(buf[i:i + n]))
            i += n
        else:
            raise ValueError("wire type %d" % wire)
    return out


def test_command_line(good):
    # a core path that is not UTF-8
    odd = os.path.join(os.fsencode(WORK), b"core-\xff\xfe-\x1b[2J.core")
    if os.path.lexists(odd):
        os.unlink(odd)
    os.symlink(os.fsencode(good), odd)
    r = hs("info", odd, "--format", "json")
    probs = basic(r)
    doc = parse_json(r, probs) if not probs else None
    if doc is not None:
        probs += expect_json_string(doc, json_policy(odd))
    R.case("a core path with bytes 0xff and ESC: info --format json", probs)
    for cmd in ("list", "leaks", "top"):
        r = hs(cmd, odd, "--format", "json")
        probs = basic(r)
        if not probs:
            parse_json(r, probs)
        R.case("a core path with bytes 0xff and ESC: %s --format json" % cmd, probs)
    r = hs("info", odd)
    probs = basic(r)
    if not probs:
        probs += shown_safely("stdout", r.out)
        probs += expect_in("stdout", text_policy(odd), r.out)
    R.case("a core path with bytes 0xff and ESC: info (text)", probs)

    missing = os.path.join(os.fsencode(WORK), b"missing-\xff-\x1b]0;x\x07.core")
    for fmt in ("text", "json"):
        r = hs("info", missing, "--format", fmt)
        probs = basic(r, rc=1)
        lines = [ln for ln in r.err.splitlines() if ln.strip()]
        if not probs and len(lines) != 1:
            probs.append("want one line on stderr: %r" % r.err)
        if not probs:
            probs += expect_in("stderr", text_policy(missing), r.err)
        R.case("a missing core path with 0xff and ESC (%s): one escaped line" % fmt, probs)

    r = hs(b"frob\x1b[2J\x9b", good)
    probs = basic(r, rc=2)
    if not probs:
        probs += expect_in("stderr", b"frob\\x1b[2J\\x9b", r.err)
    R.case("an unknown command with ESC: escaped in the error line", probs)
    r = hs("info", good, "--format", b"x\x1b]0;t\x07")
    probs = basic(r, rc=2)
    if not probs:
        probs += expect_in("stderr", b"x\\x1b]0;t\\x07", r.err)
    R.case("a bad --format value with OSC: escaped in the error line", probs)


def test_utf8(core, exe):
    """Valid UTF-8 names come out unchanged, in text and in JSON."""
    base = exe[exe.rindex(b"/") + 1:]
    for cmd in ("info", "top"):
        r = hs(cmd, core)
        probs = basic(r)
        if not probs:
            probs += shown_safely("stdout", r.out)
            wants = (FNAME_OK, PSARGS_OK, exe) if cmd == "info" else (base,)
            for b in wants:
                probs += expect_in("stdout", b, r.out)
            probs += expect_in("stderr", exe, r.err)
        R.case("UTF-8 names: %s (text) shows them unchanged" % cmd, probs)
        r = hs(cmd, core, "--format", "json")
        probs = basic(r)
        doc = parse_json(r, probs) if not probs else None
        if doc is not None:
            wants = (FNAME_OK, PSARGS_OK, exe) if cmd == "info" else (base,)
            for b in wants:
                # raw in the document, not as \\u escapes
                raw = json.dumps(b.decode("utf-8"), ensure_ascii=False)[1:-1]
                probs += expect_in("stdout", raw.encode("utf-8"), r.out)
                probs += expect_json_string(doc, b.decode("utf-8"), exact=(cmd == "info"))
        R.case("UTF-8 names: %s --format json has them raw" % cmd, probs)


def test_control(good, addr):
    """The unpatched core: nothing is escaped."""
    for cmd in COMMANDS:
        args = args_of(cmd, good, addr)
        r = hs(*args)
        probs = basic(r)
        if not probs:
            probs += shown_safely("stdout", r.out)
            if b"\\x" in r.out or b"\\x" in r.err:
                probs.append("something was escaped: %r" % r.out[r.out.find(b"\\x") - 40:][:80])
        r = hs(*(args + ["--format", "json"]))
        probs += basic(r)
        if not probs:
            parse_json(r, probs)
            if b"\\u" in r.out:
                probs.append("a \\u escape in JSON: %r" % r.out[r.out.find(b"\\u") - 40:][:80])
        R.case("unpatched core: %s, text and JSON, nothing escaped" % cmd, probs)


def main():
    if not os.access(HS, os.X_OK):
        R.case("heapsift exists", ["not found: %s" % HS])
        return R.finish()
    os.makedirs(WORK, exist_ok=True)
    t0 = time.monotonic()
    try:
        snap = hstest.take_core("corruptme", WORK)
        good = snap.core
        rec = cc.parse_record(snap.record_path)
        addr = "%#x" % rec["before"][0][0]
        hostile = os.path.join(WORK, "hostile.core")
        exe = patch_core(good, hostile, FNAME, PSARGS, EXE_TAIL)
        utf8 = os.path.join(WORK, "utf8.core")
        exe_ok = patch_core(good, utf8, FNAME_OK, PSARGS_OK, EXE_TAIL_OK)
    except (hstest.HsError, OSError, cc.CoreError, StopIteration) as e:
        R.case("take and patch the corruptme core", [repr(e)])
        return R.finish()
    print("cores ready in %.1fs: %s" % (time.monotonic() - t0, hostile))

    test_hostile(hostile, exe, addr)
    test_files(hostile, exe)
    test_command_line(good)
    test_utf8(utf8, exe_ok)
    test_control(good, addr)
    status = R.finish()
    if status == 0:
        shutil.rmtree(WORK, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
