#!/usr/bin/env bash
# Generate one row of formats/jelayout.c: the layouts of jemalloc's internal
# structures that heapsift reads from a core, for a jemalloc that has no
# debug info (Debian's libjemalloc2 is stripped, and no dbgsym package is
# published for it).
#
# How: build the same jemalloc version with the same configure options as
# the distribution, compile a small program against its internal headers
# that prints offsetof() and sizeof() of what heapsift needs, and check the
# result against the sizes the distribution's libjemalloc_pic.a (from the
# -dev package, which keeps its symbol table) gives the same objects
# (je_tsd_tls, je_arena_emap_global, je_arenas, je_sz_index2size_tab).
# The row is printed on stdout; paste it into formats/jelayout.c.
#
#   scripts/jemalloc-layout.sh [LIBRARY] [PIC_ARCHIVE]
#
# Defaults: /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 and
# /usr/lib/x86_64-linux-gnu/libjemalloc_pic.a.  The source comes from
# scripts/jemalloc-source.sh (`apt-get source jemalloc`, with a temporary
# deb-src entry for Debian 12 when apt has none); set
# JE_SRC=DIR to use an unpacked source tree instead, and JE_CONFIGURE to
# override the configure options (Debian 12 amd64's, from debian/rules:
# --with-lg-page=12 --with-lg-hugepage=21 --enable-prof).
#
# Needs: gcc, make, eu-readelf (elfutils), nm (binutils), dpkg-dev.
set -euo pipefail

LIB="${1:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}"
PIC="${2:-/usr/lib/x86_64-linux-gnu/libjemalloc_pic.a}"
CONFIGURE="${JE_CONFIGURE:---with-lg-page=12 --with-lg-hugepage=21 --enable-prof}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
say() { printf 'jemalloc-layout: %s\n' "$*" >&2; }

[ -r "$LIB" ] || { say "no library $LIB"; exit 1; }
BUILD_ID="$(eu-readelf -n "$LIB" | awk '/Build ID:/ {print $3}')"
VERSION="$(strings "$LIB" | awk '/^[0-9]+\.[0-9]+\.[0-9]+-[0-9]+-g[0-9a-f]+$/ && !f {print; f = 1}')"
PKG="$(dpkg -S "$(readlink -f "$LIB")" 2>/dev/null | cut -d: -f1 || true)"
PKGVER="$( [ -n "$PKG" ] && dpkg-query -W -f '${Version}' "$PKG" 2>/dev/null || true)"
say "library $LIB: build-id $BUILD_ID, version $VERSION, package ${PKG:-?} ${PKGVER:-?}"

SRC="${JE_SRC:-}"
if [ -z "$SRC" ]; then
	SRC="$(bash "$(dirname "${BASH_SOURCE[0]}")/jemalloc-source.sh" "$WORK")"
fi
cd "$SRC"
say "configure $CONFIGURE (in $SRC)"
./configure --with-version=VERSION $CONFIGURE >"$WORK/configure.log" 2>&1
[ "$(cat VERSION)" = "$VERSION" ] || say "warning: source version $(cat VERSION) is not the library's $VERSION"

cat > "$WORK/layout.c" <<'PROG'
#include "jemalloc/internal/jemalloc_preamble.h"
#include "jemalloc/internal/jemalloc_internal_includes.h"
#include <stdio.h>
#define F(name, val) printf("\t\t.%s = %llu,\n", #name, (unsigned long long)(val))
int main(void)
{
	F(lg_page, LG_PAGE); F(lg_quantum, LG_QUANTUM);
	F(lg_tiny_min, SC_LG_TINY_MIN); F(lg_ngroup, SC_LG_NGROUP);
	F(lg_vaddr, LG_VADDR); F(nsizes, SC_NSIZES); F(nbins, SC_NBINS);
	F(tcache_nbins_max, TCACHE_NBINS_MAX);
	F(large_minclass, SC_LARGE_MINCLASS);
	F(rtree_size, sizeof(rtree_t)); F(rtree_root_off, offsetof(rtree_t, root));
	F(rtree_height, RTREE_HEIGHT);
	F(rtree_bits0, rtree_levels[0].bits);
	F(rtree_bits1, RTREE_HEIGHT > 1 ? rtree_levels[RTREE_HEIGHT > 1].bits : 0);
	F(rtree_bits2, RTREE_HEIGHT > 2 ? rtree_levels[RTREE_HEIGHT > 2 ? 2 : 0].bits : 0);
#ifdef RTREE_LEAF_COMPACT
	F(rtree_leaf_compact, 1);
#else
	F(rtree_leaf_compact, 0);
#endif
	F(rtree_leaf_state_shift, RTREE_LEAF_STATE_SHIFT);
	F(emap_rtree_off, offsetof(emap_t, rtree));
	F(edata_size, sizeof(edata_t)); F(edata_addr_off, offsetof(edata_t, e_addr));
	F(edata_size_off, offsetof(edata_t, e_size_esn));
	F(edata_bitmap_off, offsetof(edata_t, e_slab_data));
	F(bits_arena_shift, EDATA_BITS_ARENA_SHIFT); F(bits_arena_width, EDATA_BITS_ARENA_WIDTH);
	F(bits_slab_shift, EDATA_BITS_SLAB_SHIFT);
	F(bits_state_shift, EDATA_BITS_STATE_SHIFT); F(bits_state_width, EDATA_BITS_STATE_WIDTH);
	F(bits_szind_shift, EDATA_BITS_SZIND_SHIFT); F(bits_szind_width, EDATA_BITS_SZIND_WIDTH);
	F(bits_nfree_shift, EDATA_BITS_NFREE_SHIFT); F(bits_nfree_width, EDATA_BITS_NFREE_WIDTH);
	F(bitmap_groups_max, BITMAP_GROUPS_MAX); F(slab_maxregs, SC_SLAB_MAXREGS);
	F(tsd_size, sizeof(tsd_t)); F(tsd_tcache_off, offsetof(tsd_t, TSD_MANGLE(tcache)));
	F(tsd_arena_off, offsetof(tsd_t, TSD_MANGLE(arena)));
	F(tsd_state_off, offsetof(tsd_t, state));
	F(tcache_slow_ptr_off, offsetof(tcache_t, tcache_slow));
	F(tcache_bins_off, offsetof(tcache_t, bins));
	F(cache_bin_size, sizeof(cache_bin_t));
	F(cache_bin_stack_head_off, offsetof(cache_bin_t, stack_head));
	F(cache_bin_low_bits_empty_off, offsetof(cache_bin_t, low_bits_empty));
	F(cache_bin_ncached_max, CACHE_BIN_NCACHED_MAX);
	F(tcache_slow_arena_off, offsetof(tcache_slow_t, arena));
	F(tcache_slow_tcache_off, offsetof(tcache_slow_t, tcache));
	F(tcache_slow_descriptor_off, offsetof(tcache_slow_t, cache_bin_array_descriptor));
	F(tcache_slow_dyn_alloc_off, offsetof(tcache_slow_t, dyn_alloc));
	F(descriptor_next_off, offsetof(cache_bin_array_descriptor_t, link.qre_next));
	F(descriptor_bins_off, offsetof(cache_bin_array_descriptor_t, bins));
	F(arena_size, sizeof(arena_t)); F(arena_ind_off, offsetof(arena_t, ind));
	F(arena_descriptor_ql_off, offsetof(arena_t, cache_bin_array_descriptor_ql));
	F(arenas_max, MALLOCX_ARENA_LIMIT);
	F(arena_base_off, offsetof(arena_t, base));
	F(base_blocks_off, offsetof(base_t, blocks));
	F(base_block_size_off, offsetof(base_block_t, size));
	F(base_block_next_off, offsetof(base_block_t, next));
	/* for the check against the archive's symbol sizes */
	fprintf(stderr, "je_tsd_tls %zu\nje_arena_emap_global %zu\nje_arenas %zu\nje_sz_index2size_tab %zu\n",
		sizeof(tsd_t), sizeof(emap_t), sizeof(atomic_p_t) * MALLOCX_ARENA_LIMIT,
		sizeof(size_t) * SC_NSIZES);
	return 0;
}
PROG
gcc -O2 -std=gnu11 -D_GNU_SOURCE -D_REENTRANT -DJEMALLOC_NO_PRIVATE_NAMESPACE \
	-Iinclude -o "$WORK/layout" "$WORK/layout.c"
"$WORK/layout" >"$WORK/fields" 2>"$WORK/sizes"

if [ -r "$PIC" ]; then
	while read -r sym size; do
		got="$(nm -S --defined-only "$PIC" 2>/dev/null | awk -v s="$sym" '$4 == s && !f {print $2; f = 1}')"
		if [ -z "$got" ]; then
			say "warning: $sym not in $PIC"
		elif [ $((16#$got)) -ne "$size" ]; then
			say "MISMATCH: $sym is $((16#$got)) bytes in $PIC, $size in this build: another configuration"
			exit 1
		else
			say "$sym: $size bytes, as in $PIC"
		fi
	done <"$WORK/sizes"
else
	say "warning: no $PIC to check the sizes against"
fi

printf '\t{\n\t\t.version = "%s",\n\t\t.build_id = "%s",\n' "$VERSION" "$BUILD_ID"
printf '\t\t.origin = "%s %s, configure %s",\n' "${PKG:-jemalloc}" "${PKGVER:-}" "$CONFIGURE"
cat "$WORK/fields"
printf '\t},\n'
