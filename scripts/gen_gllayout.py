#!/usr/bin/env python3
"""Generate formats/gllayout.c: the layouts of glibc's malloc structures
(and the few libc/ld.so structures the roots read), one row per glibc
release, for cores whose libc has no debug info.

Each row is read from that release's own DWARF: the libc6-dbg package's
debug files for libc.so.6 and ld-linux-x86-64.so.2, found by the build-ids
of the libc6 package's files.  gdb evaluates sizeof() and member offsets on
the debug files (no program runs).  The row records the glibc version, the
Debian package version and the libc build-id it was read from.

    scripts/gen_gllayout.py [-o formats/gllayout.c] [--check] RELEASE...

RELEASE is either a directory into which both packages were extracted
(`dpkg-deb -x libc6_V_amd64.deb DIR; dpkg-deb -x libc6-dbg_V_amd64.deb DIR`;
`/` is the installed system), or `deb:LIBC6.deb,LIBC6-DBG.deb`, which the
script extracts into a temporary directory.  Without -o the C file goes to
stdout.  --check regenerates the rows and compares them with the committed
file: it fails, naming the field, when a committed row does not match its
release's DWARF.

The packages of a Debian release:
    http://deb.debian.org/debian/dists/SUITE/main/binary-amd64/Packages.xz
lists the Filename of libc6 and libc6-dbg (pool/main/g/glibc/...).

Needs: gdb, python3.
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile

ABSENT = "HS_GL_ABSENT"

# (C field, gdb expression kind, type, member); kind "off" = offsetof,
# "size" = sizeof(member), "sizeof" = sizeof(type).  optional fields are
# ABSENT when the type or member does not exist in that release.
LIBC_FIELDS = [
    ("ms_flags", "off", "struct malloc_state", "flags", False),
    ("ms_fastbins", "off", "struct malloc_state", "fastbinsY", False),
    ("ms_fastbins_size", "size", "struct malloc_state", "fastbinsY", False),
    ("ms_top", "off", "struct malloc_state", "top", False),
    ("ms_bins", "off", "struct malloc_state", "bins", False),
    ("ms_bins_size", "size", "struct malloc_state", "bins", False),
    ("ms_next", "off", "struct malloc_state", "next", False),
    ("ms_system_mem", "off", "struct malloc_state", "system_mem", False),
    ("ms_attached_threads", "off", "struct malloc_state", "attached_threads", False),
    ("ms_sizeof", "sizeof", "struct malloc_state", None, False),
    ("mc_size", "off", "struct malloc_chunk", "mchunk_size", False),
    ("mc_fd", "off", "struct malloc_chunk", "fd", False),
    ("mc_bk", "off", "struct malloc_chunk", "bk", False),
    ("hi_ar_ptr", "off", "heap_info", "ar_ptr", False),
    ("hi_prev", "off", "heap_info", "prev", False),
    ("hi_size", "off", "heap_info", "size", False),
    ("hi_sizeof", "sizeof", "heap_info", None, False),
    ("mp_sbrk_base", "off", "struct malloc_par", "sbrk_base", False),
    ("mp_n_mmaps", "off", "struct malloc_par", "n_mmaps", False),
    ("mp_mmapped_mem", "off", "struct malloc_par", "mmapped_mem", False),
    ("mp_mmap_threshold", "off", "struct malloc_par", "mmap_threshold", False),
    ("mp_hp_pagesize", "off", "struct malloc_par", "hp_pagesize", True),
    ("mp_sizeof", "sizeof", "struct malloc_par", None, False),
    ("tc_counts", "off", "tcache_perthread_struct", "counts", True),
    ("tc_counts_size", "size", "tcache_perthread_struct", "counts", True),
    ("tc_entries", "off", "tcache_perthread_struct", "entries", True),
    ("tc_entries_size", "size", "tcache_perthread_struct", "entries", True),
    ("tc_sizeof", "sizeof", "tcache_perthread_struct", None, True),
    ("pthread_sizeof", "sizeof", "struct pthread", None, False),
    ("pthread_list", "off", "struct pthread", "list", False),
    ("pthread_tid", "off", "struct pthread", "tid", False),
    ("pthread_stackblock", "off", "struct pthread", "stackblock", False),
    ("pthread_stackblock_size", "off", "struct pthread", "stackblock_size", False),
    ("tcb_dtv", "off", "tcbhead_t", "dtv", False),
]
LD_FIELDS = [
    ("rtld_dl_stack_used", "off", "struct rtld_global", "_dl_stack_used", True),
    ("rtld_dl_stack_cache", "off", "struct rtld_global", "_dl_stack_cache", True),
    ("rtld_ro_dl_tls_static_size", "off", "struct rtld_global_ro", "_dl_tls_static_size", True),
]
FIELDS = [f[0] for f in LIBC_FIELDS + LD_FIELDS]


def die(msg):
    sys.exit("gen_gllayout: " + msg)


def build_id(path):
    """The GNU build-id note of an ELF file, hex (pure Python: PT_NOTE)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        die(f"{path}: not a 64-bit ELF file")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize)
        if p_type != 4:  # PT_NOTE
            continue
        off, end = p_offset, p_offset + p_filesz
        while off + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, off)
            name = data[off + 12:off + 12 + namesz]
            desc_off = off + 12 + ((namesz + 3) & ~3)
            if ntype == 3 and name.rstrip(b"\0") == b"GNU":
                return data[desc_off:desc_off + descsz].hex()
            off = desc_off + ((descsz + 3) & ~3)
    die(f"{path}: no build-id")


def version_string(path):
    with open(path, "rb") as f:
        data = f.read()
    m = re.search(rb"GNU C Library \(([^)]*)\) [a-z ]*release version ([0-9.]+[0-9])", data)
    if not m:
        die(f"{path}: no 'GNU C Library (...) release version' string")
    pkg = m.group(1).decode()
    return m.group(2).decode(), pkg.split()[-1], pkg


def find_file(root, names):
    for d in ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64"):
        for n in names:
            p = os.path.join(root, d, n)
            if os.path.exists(p):
                return os.path.realpath(p)
    die(f"{root}: none of {names}")


def debug_file(root, bid):
    p = os.path.join(root, "usr/lib/debug/.build-id", bid[:2], bid[2:] + ".debug")
    if not os.path.exists(p):
        die(f"{root}: no debug file for build-id {bid} (is libc6-dbg of the same version extracted there?)")
    return p


def gdb_values(debug, fields):
    args = ["gdb", "-batch", "-nx"]
    for _, kind, typ, member, _ in fields:
        if kind == "off":
            expr = f"(long)&(({typ} *)0)->{member}"
        elif kind == "size":
            expr = f"sizeof((({typ} *)0)->{member})"
        else:
            expr = f"sizeof({typ})"
        args += ["-ex", f"echo @@\\n", "-ex", f"print/d {expr}"]
    args.append(debug)
    out = subprocess.run(args, capture_output=True, text=True).stdout
    # each field's answer follows its "@@" marker: "$N = value" or nothing
    parts = out.split("@@\n")[1:]
    vals = {}
    for (name, kind, typ, member, optional), part in zip(fields, parts):
        m = re.search(r"^\$\d+ = (-?\d+)$", part, re.M)
        if m:
            vals[name] = int(m.group(1))
        elif optional:
            vals[name] = None
        else:
            die(f"{debug}: no {kind} of {typ}{'.' + member if member else ''}")
    if len(parts) != len(fields):
        die(f"{debug}: gdb answered {len(parts)} of {len(fields)} questions")
    return vals


def release_row(spec, tmp):
    if spec.startswith("deb:"):
        root = tempfile.mkdtemp(dir=tmp)
        for deb in spec[4:].split(","):
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    else:
        root = spec
    libc = find_file(root, ["libc.so.6"])
    ld = find_file(root, ["ld-linux-x86-64.so.2"])
    version, pkgver, vendor = version_string(libc)
    bid, ldbid = build_id(libc), build_id(ld)
    row = {"version": version, "packages": pkgver, "vendor": vendor,
           "build_id": bid}
    row.update(gdb_values(debug_file(root, bid), LIBC_FIELDS))
    row.update(gdb_values(debug_file(root, ldbid), LD_FIELDS))
    print(f"gen_gllayout: glibc {version} ({vendor}), libc build-id {bid}",
          file=sys.stderr)
    return row


HEADER = """\
/* glibc layout table: data, generated by scripts/gen_gllayout.py from each
 * release's libc6-dbg DWARF (see formats/gllayout.h and
 * docs/glibc-layouts.md).  Do not edit by hand: add a release by running
 * the script on its packages and replacing this file with its output. */
#include "formats/gllayout.h"

const struct hs_gl_layout hs_gl_layouts[] = {
"""
FOOTER = """\
};

const size_t hs_gl_nlayouts = sizeof(hs_gl_layouts) / sizeof(hs_gl_layouts[0]);
"""


def render(rows):
    out = [HEADER]
    for r in rows:
        out.append(f"\t/* {r['vendor']} */\n\t{{\n")
        for k in ("version", "packages", "build_id"):
            out.append(f'\t\t.{k} = "{r[k]}",\n')
        for f in FIELDS:
            v = r[f]
            out.append(f"\t\t.{f} = {ABSENT if v is None else v},\n")
        out.append("\t},\n")
    out.append(FOOTER)
    return "".join(out)


def parse_committed(path):
    """The rows of a committed formats/gllayout.c, as dicts."""
    text = open(path).read()
    rows = []
    for block in re.findall(r"\{\n(.*?)\n\t\}", text, re.S):
        r = {}
        for k, v in re.findall(r"\.(\w+) = ([^,]+),", block):
            if v.startswith('"'):
                r[k] = v.strip('"')
            else:
                r[k] = None if v == ABSENT else int(v)
        rows.append(r)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output")
    ap.add_argument("--check", metavar="GLLAYOUT_C",
                    help="compare the rows with this committed file instead of writing one")
    ap.add_argument("releases", nargs="+")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [release_row(s, tmp) for s in a.releases]
    rows.sort(key=lambda r: [int(x) for x in r["version"].split(".")])
    if a.check:
        committed = {r["build_id"]: r for r in parse_committed(a.check)}
        bad = 0
        for r in rows:
            c = committed.get(r["build_id"])
            if not c:
                print(f"gen_gllayout: glibc {r['version']} (build-id {r['build_id']}) has no row in {a.check}",
                      file=sys.stderr)
                bad += 1
                continue
            for f in ["version", "packages"] + FIELDS:
                if c.get(f) != r[f]:
                    print(f"gen_gllayout: glibc {r['version']}: .{f} is {c.get(f)} in {a.check}, {r[f]} in its DWARF",
                          file=sys.stderr)
                    bad += 1
        if bad:
            sys.exit(1)
        print(f"gen_gllayout: {len(rows)} row(s) match their DWARF", file=sys.stderr)
        return
    text = render(rows)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
