#!/usr/bin/env python3
"""heapsift redact: the copy analyzes the same and holds no secret.

  - the secrets fixture puts SECRET-<seed>-<where> strings and 16-byte
    tokens in the heap (small and mmapped blocks), on a live stack frame, in
    globals and in another thread's TLS; all of them are in the core, none
    is in the redacted copy (a byte search), nor in any report of either;
  - info, list, leaks, top and types give the same JSON for the core and
    its copy (all but the core's own path), on the secrets core and on other
    fixtures' cores;
  - gdb opens the copy and prints a backtrace through the fixture's frames;
  - --keep-strings keeps the strings (and still drops the tokens);
  - the input is never modified; -o onto the input is a usage error; a
    failure (a directory that does not exist) leaves nothing behind.

Standard library only; prints "N passed, M failed" last.
"""

import hashlib
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hstest  # noqa: E402

HS = hstest.HEAPSIFT
WORK = os.path.join(hstest.WORKDIR, "redact")
R = hstest.Checker()
SEED = 7319
COMMANDS = (["info"], ["list", "--state", "all"], ["leaks"], ["top"], ["types"], ["frag"])


def token(seed, which):
    x = (seed * 2654435761 + which + 1) & (2**64 - 1)
    out = bytearray()
    for _ in range(16):
        x ^= x >> 12
        x ^= (x << 25) & (2**64 - 1)
        x ^= x >> 27
        out.append(((x * 0x2545F4914F6CDD1D) & (2**64 - 1)) >> 56)
    return bytes(out)


def secrets():
    s = {}
    for where in ("heap", "mmap", "leak", "stack", "global", "tls"):
        s["string " + where] = ("SECRET-%d-%s" % (SEED, where)).encode()
    for which, where in ((1, "heap"), (2, "global"), (3, "stack"), (4, "tls")):
        s["token " + where] = token(SEED, which)
    return s


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def report(core, cmd):
    r = hstest.run([HS] + cmd + [core, "--format", "json"], timeout=300)
    if r.rc != 0:
        return None, "%s exit %d: %s" % (" ".join(cmd), r.rc, r.err.strip()[:300])
    try:
        d = json.loads(r.out)
    except ValueError as e:
        return None, "%s: bad JSON: %s" % (" ".join(cmd), e)
    if isinstance(d.get("core"), dict):
        d["core"].pop("path", None)
    return d, r.out


def same_analysis(name, core, red):
    problems = []
    for cmd in COMMANDS:
        a, ea = report(core, cmd)
        b, eb = report(red, cmd)
        if a is None or b is None:
            problems.append(ea if a is None else eb)
        elif a != b:
            ka = json.dumps(a, sort_keys=True)
            kb = json.dumps(b, sort_keys=True)
            i = next((i for i in range(min(len(ka), len(kb))) if ka[i] != kb[i]), 0)
            problems.append("%s differs: ...%s... vs ...%s..." %
                            (" ".join(cmd), ka[max(0, i - 80):i + 80], kb[max(0, i - 80):i + 80]))
    R.case("%s: info, list, leaks, top, types, frag identical on the redacted copy" % name, problems)


def redact(core, out, *extra):
    return hstest.run([HS, "redact", core, "-o", out] + list(extra), timeout=300)


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    core = hstest.take_core("secrets", WORK, args=[str(SEED)], record=False).core
    data = open(core, "rb").read()
    sec = secrets()
    missing = [k for k, v in sec.items() if v not in data]
    R.case("the fixture's secrets are all in its core", 
           ["not in the core: %s" % ", ".join(missing)] if missing else [])

    before = sha(core)
    red = os.path.join(WORK, "secrets.red.core")
    r = redact(core, red)
    R.case("redact exits 0 and writes the copy",
           [] if r.rc == 0 and os.path.exists(red) else ["exit %d: %s" % (r.rc, r.err)])
    if not os.path.exists(red):
        return R.finish()
    R.case("the input core is not modified", [] if sha(core) == before else ["sha256 changed"])
    rdata = open(red, "rb").read()
    R.case("the copy has the input's size",
           [] if len(rdata) == len(data) else ["%d vs %d bytes" % (len(rdata), len(data))])
    found = [k for k, v in sec.items() if v in rdata]
    R.case("no secret is left in the redacted copy",
           ["still there: %s" % ", ".join(found)] if found else [])
    leftovers = [f for f in os.listdir(WORK) if ".tmp-" in f]
    R.case("no temporary file is left", ["left: %s" % leftovers] if leftovers else [])

    same_analysis("secrets", core, red)

    problems = []
    for c in (core, red):
        for cmd in COMMANDS + (["leaks", "--list"],):
            r = hstest.run([HS] + cmd + [c], timeout=300)
            out = (r.out + r.err).encode()
            for k, v in sec.items():
                if v in out:
                    problems.append("%s %s prints the %s" % (" ".join(cmd), os.path.basename(c), k))
    R.case("no report shows a secret, for the core or its copy", problems)

    binary = os.path.join(hstest.FIXTURES, "secrets")
    r = hstest.run(["gdb", "-batch", "-ex", "thread apply all bt", binary, red], timeout=120)
    frames = [ln for ln in r.out.splitlines() if ln.startswith("#")]
    ok = any(" hold " in ln or " hold (" in ln for ln in frames) and any(" main " in ln or " main (" in ln for ln in frames)
    R.case("gdb prints a backtrace of the copy through hold() and main()",
           [] if ok else ["gdb: %s" % (r.out[-800:] + r.err[-400:])])

    keep = os.path.join(WORK, "secrets.keep.core")
    r = redact(core, keep, "--keep-strings")
    problems = [] if r.rc == 0 else ["exit %d: %s" % (r.rc, r.err)]
    if r.rc == 0:
        kdata = open(keep, "rb").read()
        for k, v in sec.items():
            if k.startswith("string") and v not in kdata:
                problems.append("--keep-strings dropped the %s" % k)
            if k.startswith("token") and v in kdata:
                problems.append("--keep-strings kept the %s" % k)
    R.case("--keep-strings keeps strings and still drops tokens", problems)

    r = redact(core, core)
    R.case("-o onto the input is a usage error and changes nothing",
           [] if r.rc == 2 and sha(core) == before else ["exit %d, sha changed: %s" % (r.rc, sha(core) != before)])
    hstest.failed_writes(R, "redact", WORK,
                    lambda path: [HS, "redact", core, "-o", path])

    # other fixtures: the analysis is unchanged by redaction
    for name, args in (("demo", []), ("corruptme", []), ("fx_mmap", []),
                       ("fx_threads", []), ("fx_noncontig", []), ("rc_tls", []),
                       ("je_threads", [])):
        binary = os.path.join(hstest.FIXTURES, name)
        if not os.path.exists(binary):
            R.skip(name, "fixture not built")
            continue
        # the jemalloc fixtures write their record to stderr without a file
        c = hstest.take_core(binary, WORK, name, args=args, record=name.startswith("je_")).core
        out = c + ".red"
        r = redact(c, out)
        if r.rc != 0:
            R.case("%s: redact" % name, ["exit %d: %s" % (r.rc, r.err)])
            continue
        same_analysis(name, c, out)
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
