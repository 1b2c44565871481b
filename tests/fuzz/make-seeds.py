#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz harnesses into DIR/NAME/ (default:
tests/fuzz/corpus; tests/fuzz/make-seeds.py [DIR [NAME...]]): the starting point from which the committed corpora
were grown (scripts/fuzz.sh NAME SECONDS --update, then --merge, which
renames them to their SHA-1).

  core      small cores: the notes and headers of a base core with every
            segment cut to 64 bytes of file data; synthetic cores with a
            zero-filled tail, a truncated segment, PN_XNUM program headers
  notes     PT_NOTE payloads: a gcore's notes (without gdb's target
            description), each note type alone, a kernel-style set with
            NT_SIGINFO
  dwarf     -g builds of tests/fuzz/seeds/dwarf_*.c and *.cpp (shared
            objects with the page alignment squeezed out, DWARF 5 and 4, a
            C++ build with type units, an object file)
  glibc     patch lists (tests/fuzz/fz_base.h) of every op over zones
  jemalloc  spread over the zone tables, for every base core
  summary   heapsift summaries (src/summary.h): a whole one, its shape
            with lists of one row, cut short at several places, and a
            field or two of each wrong type

Needs gcc, g++ and objcopy; the base cores in tests/fuzz/base.
"""
import gzip
import os
import random
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")
ONLY = set(sys.argv[2:])  # harness names; none: all

PT_LOAD, PT_NOTE = 1, 4
NT_PRSTATUS, NT_FPREGSET, NT_PRPSINFO, NT_AUXV = 1, 2, 3, 6
NT_SIGINFO, NT_FILE, NT_X86_XSTATE = 0x53494749, 0x46494C45, 0x202


def write(name, fname, data):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, fname), "wb") as f:
        f.write(data)


def load_base(fname):
    with gzip.open(os.path.join(HERE, "base", fname), "rb") as f:
        return f.read()


def phdrs(core):
    phoff, = struct.unpack_from("<Q", core, 32)
    phnum, = struct.unpack_from("<H", core, 56)
    return [struct.unpack_from("<IIQQQQQQ", core, phoff + 56 * i)
            for i in range(phnum)]


def notes_of(core):
    """[(name, type, desc)] of the core's PT_NOTE."""
    out = []
    for t, _, off, _, _, fs, _, _ in phdrs(core):
        if t != PT_NOTE:
            continue
        blob, p = core[off:off + fs], 0
        while p + 12 <= len(blob):
            nsz, dsz, typ = struct.unpack_from("<III", blob, p)
            name = blob[p + 12:p + 12 + nsz]
            d0 = p + 12 + ((nsz + 3) & ~3)
            out.append((name, typ, blob[d0:d0 + dsz]))
            p = d0 + ((dsz + 3) & ~3)
    return out


def note(name, typ, desc):
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(name), len(desc), typ) + pad(name) + pad(desc)


def prstatus(tid, rsp=0x7ffc0000, fs=0x7ff000001000, cursig=0, size=336):
    d = bytearray(size)
    struct.pack_into("<h", d, 12, cursig)
    struct.pack_into("<i", d, 32, tid)
    regs = [0] * 27
    regs[16], regs[19], regs[21] = 0x401000, rsp, fs  # rip, rsp, fs_base
    struct.pack_into("<27Q", d, 112, *regs)
    return bytes(d)


def prpsinfo(pid=1234):
    d = bytearray(136)
    d[1] = ord("T")
    struct.pack_into("<iiii", d, 16, 1000, 1000, pid, 1)
    d[40:40 + 7] = b"seedprg"
    d[56:56 + 20] = b"/usr/bin/seedprg -x "
    return bytes(d)


def auxv(pairs):
    return b"".join(struct.pack("<QQ", a, b) for a, b in pairs + [(0, 0)])


def nt_file(entries, page=4096):
    head = struct.pack("<QQ", len(entries), page)
    body = b"".join(struct.pack("<QQQ", s, e, o) for s, e, o, _ in entries)
    names = b"".join(n.encode() + b"\0" for _, _, _, n in entries)
    return head + body + names


def siginfo(signo=11, code=1, addr=0xdeadbeef):
    d = bytearray(128)
    struct.pack_into("<iii", d, 0, signo, 0, code)
    struct.pack_into("<Q", d, 16, addr)
    return bytes(d)


def build_core(notes_blob, segments, xnum=False, cut=0):
    """segments: [(vaddr, memsz, flags, data)]; data is the file part."""
    nph = 1 + len(segments)
    ehdr_size, ph_size = 64, 56
    note_off = ehdr_size + nph * ph_size
    off = note_off + len(notes_blob)
    off += -off % 8
    body, phs = bytearray(), []
    phs.append(struct.pack("<IIQQQQQQ", PT_NOTE, 0, note_off, 0, 0,
                           len(notes_blob), 0, 4))
    data_off = off
    for vaddr, memsz, flags, data in segments:
        phs.append(struct.pack("<IIQQQQQQ", PT_LOAD, flags, data_off + len(body),
                               vaddr, 0, len(data), memsz, 0x1000))
        body += data
        body += b"\0" * (-len(body) % 8)
    shoff = data_off + len(body) if xnum else 0
    e = bytearray(64)
    e[0:4] = b"\x7fELF"
    e[4], e[5], e[6] = 2, 1, 1
    struct.pack_into("<HHIQQQIHHHHHH", e, 16, 4, 62, 1, 0, ehdr_size, shoff, 0,
                     64, ph_size, 0xffff if xnum else nph, 64 if xnum else 0,
                     1 if xnum else 0, 0)
    img = bytes(e) + b"".join(phs) + notes_blob
    img += b"\0" * (data_off - len(img)) + bytes(body)
    if xnum:
        sh0 = bytearray(64)
        struct.pack_into("<I", sh0, 44, nph)  # sh_info
        img += bytes(sh0)
    return img[:len(img) - cut] if cut else img


def core_and_notes():
    mmap = load_base("glibc-secrets.core.gz")
    real = [(n, t, d) for n, t, d in notes_of(mmap) if not n.startswith(b"GDB")]
    blob = b"".join(note(*x) for x in real)
    write("notes", "seed-gcore-notes", blob)
    # each kind alone, and odd sizes
    write("notes", "seed-prstatus", note(b"CORE\0", NT_PRSTATUS, prstatus(7)))
    write("notes", "seed-prstatus-short",
          note(b"CORE\0", NT_PRSTATUS, prstatus(7, size=328)))
    write("notes", "seed-prpsinfo", note(b"CORE\0", NT_PRPSINFO, prpsinfo()))
    write("notes", "seed-auxv", note(b"CORE\0", NT_AUXV,
                                     auxv([(6, 4096), (9, 0x401000), (33, 0x7fff0000)])))
    files = [(0x400000, 0x401000, 0, "/usr/bin/seedprg"),
             (0x401000, 0x402000, 1, "/usr/bin/seedprg"),
             (0x7ff000000000, 0x7ff000002000, 0, "/lib/x86_64-linux-gnu/libc.so.6")]
    write("notes", "seed-file", note(b"CORE\0", NT_FILE, nt_file(files)))
    write("notes", "seed-siginfo", note(b"CORE\0", NT_SIGINFO, siginfo()))
    xstate = [d for n, t, d in real if t == NT_X86_XSTATE][:1]
    fpregs = [d for n, t, d in real if t == NT_FPREGSET][:1]
    kernel = (note(b"CORE\0", NT_PRSTATUS, prstatus(100, cursig=11)) +
              note(b"CORE\0", NT_PRPSINFO, prpsinfo(100)) +
              note(b"CORE\0", NT_SIGINFO, siginfo()) +
              note(b"CORE\0", NT_AUXV, auxv([(6, 4096), (9, 0x401000)])) +
              note(b"CORE\0", NT_FILE, nt_file(files)) +
              note(b"CORE\0", NT_FPREGSET, fpregs[0] if fpregs else bytes(512)) +
              note(b"LINUX\0", NT_X86_XSTATE, xstate[0] if xstate else bytes(64)) +
              note(b"CORE\0", NT_PRSTATUS, prstatus(101)))
    write("notes", "seed-kernel-style", kernel)

    # the base core's headers and notes, segments cut to 64 bytes of data
    segs = []
    for t, fl, off, va, _, fs, ms, _ in phdrs(mmap):
        if t == PT_LOAD:
            segs.append((va, ms, fl, mmap[off:off + min(fs, 64)]))
    write("core", "seed-gcore-cut", build_core(blob, segs))
    small = [(0x10000, 0x2000, 6, bytes(i & 0xff for i in range(0x100))),
             (0x20000, 0x1000, 4, b"\xab" * 0x100),
             (0x400000, 0x2000, 5, b"\x7fELF" + bytes(60))]
    write("core", "seed-small", build_core(kernel, small))
    write("core", "seed-small-truncated", build_core(kernel, small, cut=0x80))
    write("core", "seed-xnum", build_core(kernel, small, xnum=True))
    write("core", "seed-no-load", build_core(kernel, []))


def dwarf():
    src = os.path.join(HERE, "seeds")
    squeeze = ["-Wl,--build-id=none", "-Wl,-z,max-page-size=16",
               "-Wl,-z,norelro", "-Wl,-z,noseparate-code"]
    so = ["-g", "-O0", "-fPIC", "-shared", "-nostdlib"] + squeeze
    builds = [
        ("seed-glibc-dwarf5", "gcc", [], ["dwarf_glibc.c"]),
        ("seed-glibc-dwarf4", "gcc", ["-gdwarf-4"], ["dwarf_glibc.c"]),
        ("seed-jemalloc", "gcc", [], ["dwarf_jemalloc.c"]),
        ("seed-arrays", "gcc", [], ["dwarf_arrays.c"]),
        ("seed-cxx", "g++", [], ["dwarf_cxx_a.cpp", "dwarf_cxx_b.cpp"]),
        ("seed-cxx-type-units", "g++", ["-gdwarf-4", "-fdebug-types-section"],
         ["dwarf_cxx_a.cpp", "dwarf_cxx_b.cpp"]),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name, cc, extra, files in builds:
            out = os.path.join(tmp, name)
            subprocess.run([cc] + so + extra + ["-o", out + ".full"] +
                           [os.path.join(src, f) for f in files], check=True)
            subprocess.run(["objcopy", "-R", ".comment", "-R", ".eh_frame",
                            "-R", ".eh_frame_hdr", out + ".full", out], check=True)
            with open(out, "rb") as f:
                write("dwarf", name, f.read())
        obj = os.path.join(tmp, "seed-glibc-object")
        subprocess.run(["gcc", "-g", "-O0", "-c", "-o", obj,
                        os.path.join(src, "dwarf_glibc.c")], check=True)
        with open(obj, "rb") as f:
            write("dwarf", "seed-glibc-object", f.read())


def patches(name, nbases, zones):
    """Patch lists over the zone tables (fz_base.h)."""
    rnd = random.Random(name)
    for base in range(nbases):
        write(name, "seed-clean-%d" % base, bytes([base]))
    for k in range(48):
        base = k % nbases
        out = bytearray([base])
        for _ in range(1 + k % 3):
            op = rnd.randrange(4)
            z = rnd.randrange(zones[base])
            out += struct.pack("<BHI", op, z, rnd.randrange(64))
            if op == 0:
                n = rnd.choice([1, 2, 8])
                out += bytes([n - 1]) + bytes(rnd.choice([0, 0xff, 0x41])
                                              for _ in range(n))
            elif op in (1, 2):
                out += struct.pack("<HIb", rnd.randrange(zones[base]),
                                   rnd.choice([0, 8, 16, 24]),
                                   rnd.choice([0, -8, -16]))
            else:
                out += struct.pack("<Bh", rnd.choice([0, 3, 4, 12, 48]),
                                   rnd.choice([-16, -1, 1, 16, 64]))
        write(name, "seed-%02d" % k, bytes(out))


def summary():
    """Summaries: the document as heapsift summary writes it (the fields
    the reader takes, and some it skips), then damaged copies."""
    import json
    doc = {
        "format": "heapsift-summary", "version": 1,
        "core": {"path": "p1.core", "size": 650528, "truncated": False},
        "time": {"unix": 1796192818, "utc": "2026-12-02T06:26:58Z", "source": "file_mtime"},
        "process": {"pid": 4242, "name": "phases"},
        "modules": [{"name": "/bin/phases", "build_id": "7cefa7ee81d6", "executable": True},
                    {"name": "libc.so.6", "build_id": None, "executable": False}],
        "modules_total": 2, "modules_truncated": False, "partial": False,
        "totals": {"used_count": 440, "used_bytes": 32640, "free_count": 3, "free_bytes": 900,
                   "reachable": {"count": 400, "bytes": 30000},
                   "possible": {"count": 0, "bytes": 0},
                   "leaked": {"count": 40, "bytes": 5440},
                   "leak_roots": {"count": 40, "bytes": 5440}},
        "types": [{"label": "struct cache_entry", "count": 200, "bytes": 11200, "retained": 11200,
                   "leaked_count": 0, "leaked_bytes": 0},
                  {"label": "(untyped, 136 bytes)", "count": 40, "bytes": 5440, "retained": 5440,
                   "leaked_count": 40, "leaked_bytes": 5440},
                  {"label": "struct cache_entry", "count": 1, "bytes": 56, "retained": 0,
                   "leaked_count": 0, "leaked_bytes": 0}],
        "types_total": 3, "types_truncated": False,
        "roots": [{"name": "global g_cache in phases", "kind": "global", "retained": 11200,
                   "count": 200},
                  {"name": "(leaked: no root holds these)", "kind": "leaked", "retained": 5440,
                   "count": 40}],
        "roots_total": 2, "roots_truncated": False,
        "sizes": [{"size": 56, "count": 200, "bytes": 11200}], "sizes_total": 1,
        "sizes_truncated": False, "sizes_other": {"count": 0, "bytes": 0},
        "dominators": [], "dominators_total": 0, "dominators_truncated": False,
        "frag": None, "warnings": 0,
    }
    text = json.dumps(doc, indent=2).encode()
    write("summary", "seed-whole", text)
    write("summary", "seed-compact", json.dumps(doc, separators=(",", ":")).encode())
    for k, frac in enumerate((0.1, 0.5, 0.9, 0.999)):
        write("summary", "seed-cut-%d" % k, text[:int(len(text) * frac)])
    damaged = [
        ("version", lambda d: d.update(version=2)),
        ("version-string", lambda d: d.update(version="1")),
        ("format", lambda d: d.update(format="heapsift")),
        ("types-object", lambda d: d.update(types={})),
        ("bytes-string", lambda d: d["types"][0].update(bytes="1")),
        ("bytes-huge", lambda d: d["types"][0].update(bytes=2 ** 53 + 1)),
        ("count-negative", lambda d: d["types"][1].update(count=-1)),
        ("root-name-null", lambda d: d["roots"][0].update(name=None)),
        ("leaked-missing", lambda d: d["totals"].pop("leaked")),
        ("build-id-number", lambda d: d["modules"][0].update(build_id=7)),
        ("retained-max", lambda d: [t.update(retained=2 ** 53) for t in d["types"]]),
    ]
    for name, change in damaged:
        d = json.loads(text)
        change(d)
        write("summary", "seed-%s" % name, json.dumps(d).encode())
    write("summary", "seed-array", b"[1, 2, 3]")
    write("summary", "seed-empty-object", b"{}")


def main():
    want = lambda *names: not ONLY or ONLY & set(names)
    if want("core", "notes"):
        core_and_notes()
    if want("dwarf"):
        dwarf()
    # zone counts of the base cores (HS_FUZZ_ZONES=1 prints them); any
    # number works, it only spreads the seeds
    if want("glibc"):
        patches("glibc", 3, [1090, 63, 23])
    if want("jemalloc"):
        patches("jemalloc", 1, [410])
    if want("summary"):
        summary()


if __name__ == "__main__":
    main()
