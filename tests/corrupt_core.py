#!/usr/bin/env python3
"""Make corrupted copies of an x86-64 ELF core file.

The generator patches bytes at *virtual addresses* of the dumped process:
each address is translated to a file offset through the core's PT_LOAD
program headers (the bytes must be present in the file, i.e. inside
p_filesz of some segment).

Two ways to use it:

  Low level, any core:
    corrupt_core.py IN OUT --u64 VADDR=VALUE ... --bytes VADDR=HEX ...
                           --safe-ptr FIELD_VADDR=TARGET ...
                           --pr-pid N=TID ...
    corrupt_core.py IN --read VADDR[:LEN]
  (--pr-pid patches the notes, not memory: pr_pid of the Nth CORE/NT_PRSTATUS
  note, 1 being the first thread's)

  Recipes for the corruptme fixture (tests/fixtures/corruptme.c), whose
  record file (written through $HS_RECORD) lists the addresses involved:
    corrupt_core.py IN OUT --record REC --recipe NAME
  with NAME one of: fastbin-loop, tcache-loop, fastbin-wild, tcache-wild,
  huge-size, zero-size, wild-top.  Each recipe first checks that the bytes it is about to change
  hold what glibc 2.36 would have written there, so a layout surprise is
  reported instead of silently producing a meaningless core.

Layouts (glibc 2.36 malloc/malloc.c):
  chunk:  prev_size @0, size @8 (low 3 bits: PREV_INUSE, IS_MMAPPED,
          NON_MAIN_ARENA), fd @16, bk @24; the user pointer is chunk + 16.
  safe-linking (PROTECT_PTR): a tcache `next` or a fastbin `fd` stores
          (address_of_the_field >> 12) ^ target.  Fastbin fd targets are
          chunk addresses; tcache next targets are user pointers.
  malloc_state: mutex @0, flags @4, have_fastchunks @8, fastbinsY[10] @16,
          top @96, last_remainder @104, bins[] @112.  The only chunk in the
          unsorted bin has fd == bk == bin_at(av, 1) == &av->top, which is
          how the recipes find main_arena without symbols.
"""

import argparse
import shutil
import struct
import sys

PT_LOAD = 1
PT_NOTE = 4
ET_CORE = 4

SIZE_BITS = 0x7
MALLOC_STATE_TOP = 96
MALLOC_STATE_FASTBINS = 16
MALLOC_STATE_NEXT = 2160         # after bins[254] and binmap[4]
MALLOC_STATE_SYSTEM_MEM = 2184   # after next, next_free, attached_threads
WILD = 0x414141414140      # aligned, and never mapped in a test process


class CoreError(Exception):
    pass


class Segment:
    __slots__ = ("type", "offset", "vaddr", "filesz", "memsz", "flags")

    def __init__(self, ptype, offset, vaddr, filesz, memsz, flags):
        self.type = ptype
        self.offset = offset
        self.vaddr = vaddr
        self.filesz = filesz
        self.memsz = memsz
        self.flags = flags

    def __repr__(self):
        return ("Segment(type=%d, offset=%#x, vaddr=%#x, filesz=%#x, memsz=%#x)"
                % (self.type, self.offset, self.vaddr, self.filesz, self.memsz))


def read_header(path):
    """Return (ehdr dict, [Segment]) of an ELF64 little-endian file."""
    with open(path, "rb") as f:
        ident = f.read(64)
        if len(ident) < 64 or ident[:4] != b"\x7fELF":
            raise CoreError("%s: not an ELF file" % path)
        if ident[4] != 2 or ident[5] != 1:
            raise CoreError("%s: not ELF64 little-endian" % path)
        (e_type, e_machine, _version, _entry, e_phoff, _shoff, _flags,
         _ehsize, e_phentsize, e_phnum) = struct.unpack_from(
             "<HHIQQQIHHH", ident, 16)
        if e_phentsize != 56:
            raise CoreError("%s: unexpected e_phentsize %d" % (path, e_phentsize))
        f.seek(e_phoff)
        raw = f.read(56 * e_phnum)
        if len(raw) != 56 * e_phnum:
            raise CoreError("%s: program headers cut short" % path)
    segs = []
    for i in range(e_phnum):
        (p_type, p_flags, p_offset, p_vaddr, _paddr, p_filesz, p_memsz,
         _align) = struct.unpack_from("<IIQQQQQQ", raw, 56 * i)
        segs.append(Segment(p_type, p_offset, p_vaddr, p_filesz, p_memsz, p_flags))
    ehdr = {"type": e_type, "machine": e_machine, "phoff": e_phoff,
            "phentsize": e_phentsize, "phnum": e_phnum}
    return ehdr, segs


def load_segments(path):
    return [s for s in read_header(path)[1] if s.type == PT_LOAD]


def note_segment(path):
    for s in read_header(path)[1]:
        if s.type == PT_NOTE:
            return s
    raise CoreError("%s: no PT_NOTE" % path)


NT_PRSTATUS = 1
PRSTATUS_PID = 32   # pr_pid in the NT_PRSTATUS descriptor (formats/elfcore.c)


def prstatus_pids(path):
    """[(file offset of pr_pid, pr_pid)] for each CORE/NT_PRSTATUS note of the
    first PT_NOTE segment, in note order (the order of the core's threads)."""
    note = note_segment(path)
    with open(path, "rb") as f:
        f.seek(note.offset)
        data = f.read(note.filesz)
    out = []
    p = 0
    while p + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, p)
        desc = p + 12 + ((namesz + 3) & ~3)
        if desc + descsz > len(data):
            break
        name = data[p + 12:p + 12 + namesz].rstrip(b"\0")
        if name == b"CORE" and ntype == NT_PRSTATUS and descsz >= PRSTATUS_PID + 4:
            pid = struct.unpack_from("<i", data, desc + PRSTATUS_PID)[0]
            out.append((note.offset + desc + PRSTATUS_PID, pid))
        p = desc + ((descsz + 3) & ~3)
    return out


def set_pr_pids(path, values):
    """values: {thread number (1 = the first NT_PRSTATUS note): pr_pid}.
    Patches path in place; returns the old values."""
    pids = prstatus_pids(path)
    old = {}
    with open(path, "r+b") as f:
        for n, tid in values.items():
            if not 1 <= n <= len(pids):
                raise CoreError("%s: no thread %d (the core has %d)" % (path, n, len(pids)))
            off, old[n] = pids[n - 1]
            f.seek(off)
            f.write(struct.pack("<I", tid & 0xFFFFFFFF))
    return old


def segment_of(segs, vaddr):
    for s in segs:
        if s.vaddr <= vaddr < s.vaddr + s.memsz:
            return s
    return None


def vaddr_to_offset(segs, vaddr, length=1):
    """File offset of [vaddr, vaddr+length), which must be file-backed."""
    s = segment_of(segs, vaddr)
    if s is None:
        raise CoreError("address %#x is not in any PT_LOAD segment" % vaddr)
    if vaddr + length > s.vaddr + s.filesz:
        raise CoreError("address %#x+%d is not in the file part of %r"
                        % (vaddr, length, s))
    return s.offset + (vaddr - s.vaddr)


class Core:
    """A core file opened for reading and (optionally) patching."""

    def __init__(self, path, writable=False):
        self.path = path
        self.segs = load_segments(path)
        self.f = open(path, "r+b" if writable else "rb")

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def read(self, vaddr, n):
        self.f.seek(vaddr_to_offset(self.segs, vaddr, n))
        data = self.f.read(n)
        if len(data) != n:
            raise CoreError("%s: short read at %#x" % (self.path, vaddr))
        return data

    def u64(self, vaddr):
        return struct.unpack("<Q", self.read(vaddr, 8))[0]

    def write(self, vaddr, data):
        self.f.seek(vaddr_to_offset(self.segs, vaddr, len(data)))
        self.f.write(data)

    def put_u64(self, vaddr, value):
        self.write(vaddr, struct.pack("<Q", value & 0xFFFFFFFFFFFFFFFF))


def protect_ptr(field_addr, target):
    """glibc's PROTECT_PTR(pos, ptr): ((size_t)pos >> 12) ^ (size_t)ptr."""
    return ((field_addr >> 12) ^ target) & 0xFFFFFFFFFFFFFFFF


def reveal_ptr(field_addr, stored):
    return protect_ptr(field_addr, stored)


# ---------------------------------------------------------------------------
# The corruptme record and the recipes.

def parse_record(path):
    """Parse a corruptme record: {"before": [(addr, size)...], "mid": ...,
    "tcache": [addr...], ...}."""
    rec = {}
    with open(path) as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            key, vals = words[0], words[1:]
            if key == "end":
                rec["end"] = True
            elif key == "pid":
                rec["pid"] = int(vals[0])
            elif key in ("before", "mid", "after", "guard"):
                rec.setdefault(key, []).append((int(vals[0], 16), int(vals[1])))
            else:
                rec[key] = [int(v, 16) for v in vals]
    if not rec.get("end"):
        raise CoreError("%s: incomplete record" % path)
    return rec


def expect(cond, what):
    if not cond:
        raise CoreError("layout check failed: " + what)


def main_arena_top_addr(core, rec):
    """&main_arena.top, from the fd of the only chunk in the unsorted bin."""
    big_chunk = rec["unsorted"][0] - 16
    fd = core.u64(big_chunk + 16)
    bk = core.u64(big_chunk + 24)
    expect(fd == bk, "unsorted chunk fd %#x != bk %#x" % (fd, bk))
    top = core.u64(fd)
    guard = rec["guard"][0][0]
    expect(guard < top < guard + (1 << 24),
           "main_arena.top %#x is not just past the guard %#x" % (top, guard))
    # fastbinsY[1] (0x30 chunks) must be the last freed fastbin chunk.
    arena = fd - MALLOC_STATE_TOP
    fb1 = core.u64(arena + MALLOC_STATE_FASTBINS + 8)
    expect(fb1 == rec["fastbin"][-1] - 16,
           "fastbinsY[1] %#x is not chunk of %#x" % (fb1, rec["fastbin"][-1]))
    return fd


def check_fastbin(core, rec):
    mems = rec["fastbin"]          # free order; the head is the last one
    for i, mem in enumerate(mems):
        want = 0 if i == 0 else mems[i - 1] - 16
        got = reveal_ptr(mem, core.u64(mem))
        expect(got == want, "fastbin fd of %#x is %#x, want %#x" % (mem, got, want))


def check_tcache(core, rec):
    mems = rec["tcache"]
    for i, mem in enumerate(mems):
        want = 0 if i == 0 else mems[i - 1]
        got = reveal_ptr(mem, core.u64(mem))
        expect(got == want, "tcache next of %#x is %#x, want %#x" % (mem, got, want))


def chunk_size_field(rec, key="mid"):
    mem, req = rec[key][0]
    return mem - 8, req


def recipe_patches(core, rec, name):
    """Return [(vaddr, new_u64, description)] for a recipe, after checking
    the current contents."""
    if name == "fastbin-loop":
        # Head -> fb[n-1] -> fb[n-2] -> ... -> fb[0] -> NULL becomes
        # ... -> fb[0] -> fb[n-2]: a cycle that does not pass the head.
        check_fastbin(core, rec)
        mems = rec["fastbin"]
        expect(len(mems) >= 3, "need at least 3 fastbin chunks")
        tail = mems[0]
        target = mems[-2] - 16
        return [(tail, protect_ptr(tail, target),
                 "fastbin fd of chunk %#x -> chunk %#x" % (tail - 16, target))]
    if name == "tcache-loop":
        # Head tc[n-1] -> tc[n-2] -> ...; make tc[n-2] point back to the
        # head: a 2-cycle, shorter than the bin's count.
        check_tcache(core, rec)
        mems = rec["tcache"]
        expect(len(mems) >= 3, "need at least 3 tcache entries")
        second, head = mems[-2], mems[-1]
        return [(second, protect_ptr(second, head),
                 "tcache next of %#x -> %#x" % (second, head))]
    if name == "fastbin-wild":
        # The head's fd points to unmapped memory.
        check_fastbin(core, rec)
        head = rec["fastbin"][-1]
        return [(head, protect_ptr(head, WILD),
                 "fastbin fd of chunk %#x -> %#x" % (head - 16, WILD))]
    if name == "tcache-wild":
        # The second entry's next points to unmapped memory.
        check_tcache(core, rec)
        second = rec["tcache"][-2]
        return [(second, protect_ptr(second, WILD),
                 "tcache next of %#x -> %#x" % (second, WILD))]
    if name in ("huge-size", "zero-size"):
        field, req = chunk_size_field(rec)
        cur = core.u64(field)
        want_size = max(32, (req + 8 + 15) & ~15)
        expect(cur & ~SIZE_BITS == want_size and cur & 1,
               "size field of mid chunk is %#x, want %#x|PREV_INUSE" % (cur, want_size))
        # Keep PREV_INUSE: the previous chunk stays in use, so only the size
        # itself is wrong.
        new = (0x41414141410 if name == "huge-size" else 0) | 1
        return [(field, new, "size of chunk %#x: %#x -> %#x" % (field - 8, cur, new))]
    if name == "wild-top":
        top_field = main_arena_top_addr(core, rec)
        new = 0xdead00000000
        return [(top_field, new, "main_arena.top (at %#x) -> %#x" % (top_field, new))]
    if name == "huge-system-mem":
        # One statistic: main_arena.system_mem becomes huge.  The fixture
        # has one arena, so main_arena.next points back at main_arena, and
        # system_mem follows next, next_free and attached_threads.
        arena = main_arena_top_addr(core, rec) - MALLOC_STATE_TOP
        nxt = core.u64(arena + MALLOC_STATE_NEXT)
        expect(nxt == arena, "main_arena.next %#x is not main_arena %#x" % (nxt, arena))
        field = arena + MALLOC_STATE_SYSTEM_MEM
        cur = core.u64(field)
        expect(cur and cur % 4096 == 0 and cur < 1 << 32,
               "main_arena.system_mem %#x is not a plausible size" % cur)
        new = 0x7ffffffffffff000
        return [(field, new, "main_arena.system_mem (at %#x) %#x -> %#x" % (field, cur, new))]
    raise CoreError("unknown recipe %r" % name)


RECIPES = ("fastbin-loop", "tcache-loop", "fastbin-wild", "tcache-wild",
           "huge-size", "zero-size", "wild-top", "huge-system-mem")


def make_corrupt(src, dst, rec, name):
    """Copy src to dst and apply a recipe; returns the list of patches."""
    with Core(src) as core:
        patches = recipe_patches(core, rec, name)
    shutil.copyfile(src, dst)
    with Core(dst, writable=True) as core:
        for vaddr, value, _ in patches:
            core.put_u64(vaddr, value)
    return patches


# ---------------------------------------------------------------------------

def parse_assign(s):
    if "=" not in s:
        raise argparse.ArgumentTypeError("expected VADDR=VALUE, got %r" % s)
    a, b = s.split("=", 1)
    return int(a, 0), b


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("core")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--read", metavar="VADDR[:LEN]")
    ap.add_argument("--u64", action="append", default=[], type=parse_assign,
                    metavar="VADDR=VALUE")
    ap.add_argument("--bytes", action="append", default=[], type=parse_assign,
                    metavar="VADDR=HEX")
    ap.add_argument("--safe-ptr", action="append", default=[], type=parse_assign,
                    metavar="FIELD=TARGET",
                    help="store PROTECT_PTR(FIELD, TARGET) at FIELD")
    ap.add_argument("--pr-pid", action="append", default=[], type=parse_assign,
                    metavar="N=TID", help="set pr_pid of the Nth NT_PRSTATUS note")
    ap.add_argument("--record")
    ap.add_argument("--recipe", choices=RECIPES)
    args = ap.parse_args(argv)

    try:
        if args.read:
            addr, _, n = args.read.partition(":")
            with Core(args.core) as core:
                data = core.read(int(addr, 0), int(n, 0) if n else 8)
            print(data.hex())
            return 0
        if not args.out:
            ap.error("OUT is required unless --read is given")
        if args.recipe:
            if not args.record:
                ap.error("--recipe needs --record")
            for vaddr, value, what in make_corrupt(
                    args.core, args.out, parse_record(args.record), args.recipe):
                print("%s: %#x <- %#x (%s)" % (args.out, vaddr, value, what))
            return 0
        shutil.copyfile(args.core, args.out)
        with Core(args.out, writable=True) as core:
            for vaddr, val in args.u64:
                core.put_u64(vaddr, int(val, 0))
            for vaddr, val in args.bytes:
                core.write(vaddr, bytes.fromhex(val))
            for vaddr, val in args.safe_ptr:
                core.put_u64(vaddr, protect_ptr(vaddr, int(val, 0)))
        if args.pr_pid:
            set_pr_pids(args.out, {n: int(v, 0) for n, v in args.pr_pid})
        return 0
    except (CoreError, OSError) as e:
        print("corrupt_core: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
