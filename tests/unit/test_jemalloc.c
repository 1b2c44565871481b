/* The jemalloc 5.x walk proper (hs_jemalloc_walk_known) on a synthetic
 * core (tests/unit/mockcore.h) laid out by hand with the offsets of
 * formats/jelayout.c's Debian 12 row (4 KiB pages, a two-level extent map
 * of 18 + 18 bits, 232 size classes of which 36 have slabs) by
 * tests/unit/jemalloc_heap.c:
 *
 *   LIBDATA (the library's writable data)
 *     EMAP    emap_t: its rtree's root, one entry -> LEAF
 *     ARENAS  arenas[0] = ARENA0, arenas[1] = ARENA1
 *   META (arena 0's base block)      META2 (arena 1's base block)
 *     BASE0, ARENA0, ARENA1,            BASE1
 *     the edata_t of each extent,
 *     SLOW (the thread's tcache_slow_t), LEAF (a leaf of the rtree)
 *   THR   thread 1's tsd_t (fs_base above it): arena 0, its tcache
 *   HEAP  the extents:
 *     SLAB48  arena 0, class 3 (48 bytes), 3 pages, 256 regions: 6 free
 *             in its bitmap, 3 held in the tcache's bin 3
 *     SLAB8   arena 1, class 0 (8 bytes), 1 page, 512 regions: 33 free
 *     LARGE   arena 0, 16 KiB at +0x240 of 5 pages (used)
 *     CACHED  arena 0, 20 KiB at +0x80 of 6 pages, in the tcache's bin 37
 *     STACKS  arena 0, 16 KiB: the tcache's own allocation (dyn_alloc),
 *             which holds the bins' stacks
 *     DIRTY (arena 0, 2 pages), MUZZY (arena 1, 3), RETAINED (arena 0, 8)
 *
 * The block table, the size classes, the arenas and jemalloc's stats are
 * checked exactly; then hostile variants of the same core, each of which
 * must give an error, or a warning and a partial heap (never a crash). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/alloc/heap.h"
#include "analyzers/alloc/jemalloc.h"
#include "formats/jelayout.h"
#include "tests/unit/jemalloc_heap.h"
#include "tests/unit/mockcore.h"
#include "tests/unit/check.h"

/* where a block is (enum hs_where), under the test's own names */
#define W_SMALL HS_JE_SMALL
#define W_LARGE HS_JE_LARGE
#define W_SLAB HS_JE_SLAB
#define W_TCACHE HS_JE_TCACHE
#define W_INTERNAL HS_JE_INTERNAL
#define W_DIRTY HS_JE_DIRTY
#define W_MUZZY HS_JE_MUZZY
#define W_RETAINED HS_JE_RETAINED

/* ---- the expected heap ---- */

struct want {
	uint64_t addr, size;
	enum hs_je_where where;
	uint32_t arena;
};
static struct want want[1024];
static size_t nwant;

static void expect(uint64_t addr, uint64_t size, enum hs_je_where where, uint32_t arena)
{
	want[nwant++] = (struct want){addr, size, where, arena};
}

/* The good core's blocks, in address order (the extents are). */
static void expect_all(void)
{
	nwant = 0;
	for (uint64_t r = 0; r < 256; r++) {
		bool c = r >= 10 && r <= 12;
		expect(ext[SLAB48].base + 48 * r, 48,
		       slab48_free(r) ? W_SLAB : c ? W_TCACHE : W_SMALL, 0);
	}
	for (uint64_t r = 0; r < 512; r++)
		expect(ext[SLAB8].base + 8 * r, 8, slab8_free(r) ? W_SLAB : W_SMALL, 1);
	expect(ext[LARGE].base + 0x240, 16384, W_LARGE, 0);
	expect(ext[CACHED].base + 0x80, 20480, W_TCACHE, 0);
	expect(ext[STACKS].base, 16384, W_INTERNAL, 0);
	expect(ext[DIRTY].base, 2 * PAGE, W_DIRTY, 0);
	expect(ext[MUZZY].base, 3 * PAGE, W_MUZZY, 1);
	expect(ext[RETAINED].base, 8 * PAGE, W_RETAINED, 0);
}

static struct want *want_at(uint64_t addr)
{
	for (size_t i = 0; i < nwant; i++)
		if (want[i].addr == addr)
			return &want[i];
	abort();  /* the test's own mistake */
}

static void drop_want(uint64_t lo, uint64_t hi)
{
	size_t k = 0;
	for (size_t i = 0; i < nwant; i++)
		if (want[i].addr < lo || want[i].addr >= hi)
			want[k++] = want[i];
	nwant = k;
}

static const char *where_name(unsigned w)
{
	const char *n = w < HS_WHERE_MAX ? hs_jemalloc_backend.places[w].name : NULL;
	return n ? n : "?";
}

/* The block table against want[]: one check for the count, one per block
 * (address, size, where, so its state, and arena). */
static void check_blocks(const char *what, const struct hs_heap *h)
{
	CHECKF(h->nallocs == nwant, "%s: %zu blocks, want %zu", what, h->nallocs, nwant);
	int reported = 0;
	for (size_t i = 0; i < nwant && i < h->nallocs; i++) {
		const struct hs_alloc *a = &h->allocs[i];
		const struct want *w = &want[i];
		enum hs_state state = w->where == W_SMALL || w->where == W_LARGE ||
				      w->where == W_INTERNAL ? HS_STATE_USED : HS_STATE_FREE;
		check_count++;
		if (a->addr == w->addr && a->size == w->size && a->where == w->where &&
		    hs_heap_arena(h, i) == w->arena && hs_alloc_state(a) == state)
			continue;
		check_failures++;
		if (reported++ < 8)
			fprintf(stderr, "%s: block %zu is %#llx %llu %s arena %u, want %#llx %llu %s arena %u\n",
				what, i, (unsigned long long)a->addr, (unsigned long long)a->size,
				where_name(a->where), (unsigned)hs_heap_arena(h, i),
				(unsigned long long)w->addr, (unsigned long long)w->size,
				where_name(w->where), w->arena);
	}
	if (reported > 8)
		fprintf(stderr, "%s: %d blocks differ\n", what, reported);
}

/* ---- running ---- */

struct run {
	uint8_t *bytes;
	struct hs_core *core;
	struct hs_log log;
	struct hs_heap *heap;
	struct hs_error *err;
};

static void walk(struct run *r, struct mock_core *m,
		 const struct hs_jemalloc_known *k)
{
	size_t len;
	memset(r, 0, sizeof(*r));
	r->bytes = mock_build(m, &len);
	mock_free(m);
	hs_log_init(&r->log, getenv("HS_UNIT_VERBOSE") ? stderr : NULL, false);
	struct hs_error *err = hs_core_open_memory("jemalloc.core", r->bytes, len,
						   &r->log, &r->core);
	if (err) {
		fprintf(stderr, "open: %s\n", err->message);
		exit(1);
	}
	r->err = hs_jemalloc_walk_known(r->core, k, &r->log, &r->heap);
}

static void done(struct run *r)
{
	if (r->heap)
		hs_heap_destroy(r->heap);
	hs_error_destroy(r->err);
	hs_core_destroy(r->core);
	hs_log_fini(&r->log);
	free(r->bytes);
}

static bool has_region(const struct hs_heap *h, uint64_t start, uint64_t end,
		       enum hs_region_kind kind)
{
	for (size_t i = 0; i < h->nregions; i++)
		if (h->regions[i].start == start && h->regions[i].end == end &&
		    h->regions[i].kind == kind)
			return true;
	return false;
}

static bool has_warning(const struct hs_log *log, const char *text)
{
	for (size_t i = 0; i < log->nkept; i++)
		if (strstr(log->kept[i], text))
			return true;
	return false;
}

/* ---- the good core ---- */

static void test_good(void)
{
	struct mock_core m;
	struct hs_jemalloc_known k = known();
	struct run r;
	build_mock(&m);
	walk(&r, &m, &k);
	CHECKF(!r.err, "good core: %s", r.err ? r.err->message : "");
	if (r.err) {
		done(&r);
		return;
	}
	const struct hs_heap *h = r.heap;
	CHECK(!h->partial && r.log.nwarnings == 0);
	CHECK(!strcmp(h->allocator, "jemalloc") && h->headerless);
	CHECK(h->version && !strcmp(h->version, L->version));
	CHECK(h->page_size == PAGE && h->ntcaches == 1);
	CHECK(h->metadata_bytes == META_SIZE + META2_SIZE);
	expect_all();
	check_blocks("good core", h);

	/* the size classes that have slabs, by arena then class */
	CHECK(h->nclasses == 2);
	if (h->nclasses == 2) {
		const struct hs_size_class *c = &h->classes[0];
		CHECK(c->arena == 0 && c->index == 3 && c->size == 48 && c->slabs == 1 &&
		      c->regions == 256 && c->free == NFREE48 && c->tcache == 3);
		c = &h->classes[1];
		CHECK(c->arena == 1 && c->index == 0 && c->size == 8 && c->slabs == 1 &&
		      c->regions == 512 && c->free == NFREE8 && c->tcache == 0);
	}

	/* the arenas, by index: used = small, large and internal blocks;
	 * free = the rest (thread caches' included); system memory = the
	 * extents but retained ones */
	CHECK(h->narenas == 2);
	if (h->narenas == 2) {
		const struct hs_arena *a = &h->arenas[0];
		CHECK(a->addr == ARENA0 && a->main);
		CHECK(a->used_count == 256 - NFREE48 - 3 + 2 &&
		      a->used_bytes == (256 - NFREE48 - 3) * 48 + 16384 + 16384);
		CHECK(a->free_count == NFREE48 + 3 + 1 + 2 &&
		      a->free_bytes == (NFREE48 + 3) * 48 + 20480 + 2 * PAGE + 8 * PAGE);
		CHECK(a->system_mem == (3 + 5 + 6 + 5 + 2) * PAGE);
		a = &h->arenas[1];
		CHECK(a->addr == ARENA1 && !a->main);
		CHECK(a->used_count == 512 - NFREE8 && a->used_bytes == (512 - NFREE8) * 8);
		CHECK(a->free_count == NFREE8 + 1 && a->free_bytes == NFREE8 * 8 + 3 * PAGE);
		CHECK(a->system_mem == (1 + 3) * PAGE);
	}

	/* jemalloc's stats: allocated counts what thread caches hold */
	const struct hs_je_stats *st = hs_jemalloc_stats(h);
	CHECK(st != NULL);
	if (st) {
		CHECK(st->allocated == (256 - NFREE48) * 48 + (512 - NFREE8) * 8 +
					       16384 + 20480 + 16384);
		CHECK(st->active == (3 + 1 + 5 + 6 + 5) * PAGE);
		CHECK(st->dirty == 2 * PAGE && st->muzzy == 3 * PAGE &&
		      st->retained == 8 * PAGE);
		CHECK(st->metadata_blocks == META_SIZE + META2_SIZE);
		CHECK(st->extent_map == EMAP && st->arenas_array == ARENAS);
		CHECK(st->layout == L->origin);
	}

	/* what the allocator owns: each extent (heap), its metadata blocks,
	 * the thread's tsd and the library's writable data (metadata) */
	CHECK(h->nregions == NEXT + 4);
	for (int e = 0; e < NEXT; e++)
		CHECKF(has_region(h, ext[e].base, ext[e].base + ext[e].pages * PAGE,
				  HS_REGION_HEAP), "extent %d's region", e);
	CHECK(has_region(h, META, META + META_SIZE, HS_REGION_META));
	CHECK(has_region(h, META2, META2 + META2_SIZE, HS_REGION_META));
	CHECK(has_region(h, TSD, TSD + L->tsd_size, HS_REGION_META));
	CHECK(has_region(h, LIBDATA, LIBDATA + LIBDATA_SIZE, HS_REGION_META));
	done(&r);

	/* the arenas array not known: found in the library's data from the
	 * arena the thread uses; the same heap */
	build_mock(&m);
	k.arenas = 0;
	walk(&r, &m, &k);
	CHECKF(!r.err, "arenas by scan: %s", r.err ? r.err->message : "");
	if (!r.err) {
		CHECK(!r.heap->partial && r.log.nwarnings == 0);
		CHECK(hs_jemalloc_stats(r.heap)->arenas_array == ARENAS);
		check_blocks("arenas by scan", r.heap);
	}
	done(&r);

	/* the size classes given instead of computed: the walk takes them
	 * (the cached large extent's class made smaller) */
	uint64_t sizes[232];
	jemalloc_sizes(sizes);
	sizes[37] = 18000;
	build_mock(&m);
	k = known();
	k.sizes = sizes;
	walk(&r, &m, &k);
	CHECKF(!r.err, "sizes given: %s", r.err ? r.err->message : "");
	if (!r.err) {
		CHECK(!r.heap->partial);
		expect_all();
		want_at(ext[CACHED].base + 0x80)->size = 18000;
		check_blocks("sizes given", r.heap);
	}
	done(&r);
}

/* ---- hostile variants ---- */

/* The outcome a damaged core must have: an error, or a warning saying
 * (text) and a partial heap. */
static bool warned(const char *what, const struct run *r, const char *text)
{
	if (r->err) {
		if (getenv("HS_UNIT_VERBOSE"))
			fprintf(stderr, "%s: %s\n", what, r->err->message);
		return true;
	}
	bool ok = r->heap->partial && has_warning(&r->log, text);
	CHECKF(ok, "%s: partial %d, %zu warnings, none saying \"%s\"", what,
	       r->heap->partial, r->log.nwarnings, text);
	return ok;
}

static void test_hostile(void)
{
	uint64_t sizes[232];
	struct mock_core m;
	struct hs_jemalloc_known k = known();
	struct run r;

	/* a root entry pointing outside the core: the rest is walked */
	build_mock(&m);
	mock_put64(&m, EMAP + L->emap_rtree_off + L->rtree_root_off + 8 * 7, OUTSIDE);
	mock_put64(&m, EMAP + L->emap_rtree_off + L->rtree_root_off + 8 * 9, LEAF + 4);
	walk(&r, &m, &k);
	CHECK(!r.err);
	if (!r.err && warned("root outside", &r, "2 nodes are not in the core")) {
		expect_all();
		check_blocks("root outside", r.heap);
	}
	done(&r);

	/* leaf words naming edata_t outside the core, and garbage */
	build_mock(&m);
	put_leaf(&m, HEAP + 0x30000, OUTSIDE);
	put_leaf(&m, HEAP + 0x31000, GARBAGE);
	for (uint64_t i = 0; i < 128; i += 8)
		mock_put64(&m, GARBAGE + i, check_rand());
	walk(&r, &m, &k);
	if (warned("garbage edata", &r, "extents are unreadable, inconsistent")) {
		expect_all();
		check_blocks("garbage edata", r.heap);
	}
	done(&r);

	/* szind out of range: an active large extent past the classes (232),
	 * a slab of a large class */
	build_mock(&m);
	mock_put64(&m, edata_of(LARGE), (uint64_t)255 << 20 | 1u << 13);
	mock_put64(&m, edata_of(SLAB8), 1 | 1u << 12 | (uint64_t)40 << 20);
	walk(&r, &m, &k);
	CHECK(!r.err);
	if (!r.err && warned("szind", &r, "2 extents are unreadable")) {
		expect_all();
		drop_want(ext[SLAB8].base, ext[SLAB8].base + PAGE);
		drop_want(ext[LARGE].base, ext[LARGE].base + 5 * PAGE);
		check_blocks("szind", r.heap);
		CHECK(r.heap->nclasses == 1);
	}
	done(&r);

	/* nfree larger than the slab: the bitmap decides */
	build_mock(&m);
	put_extent(&m, SLAB48, 1000);
	walk(&r, &m, &k);
	CHECK(!r.err);
	if (!r.err && warned("nfree", &r, "1 slabs' free counts disagree")) {
		expect_all();
		check_blocks("nfree", r.heap);
	}
	done(&r);

	/* a bitmap that says every region of SLAB8 is free, against nfree */
	build_mock(&m);
	uint64_t ones[8];
	memset(ones, 0xff, sizeof(ones));
	mock_write(&m, edata_of(SLAB8) + L->edata_bitmap_off, ones, sizeof(ones));
	walk(&r, &m, &k);
	CHECK(!r.err);
	if (!r.err && warned("bitmap", &r, "1 slabs' free counts disagree")) {
		expect_all();
		for (uint64_t i = 0; i < 512; i++)
			want_at(ext[SLAB8].base + 8 * i)->where = W_SLAB;
		check_blocks("bitmap", r.heap);
		CHECK(r.heap->nclasses == 2 && r.heap->classes[1].free == 512);
	}
	done(&r);

	/* extent sizes that overflow: a retained extent to past the end of
	 * the address space, a dirty one of 2^60 bytes */
	build_mock(&m);
	mock_put64(&m, edata_of(RETAINED) + L->edata_size_off, 0xfffffffffffff000ull);
	mock_put64(&m, edata_of(DIRTY) + L->edata_size_off, 1ull << 60);
	walk(&r, &m, &k);
	if (warned("size overflow", &r, "2 extents are unreadable")) {
		expect_all();
		drop_want(ext[DIRTY].base, ext[DIRTY].base + 1);
		drop_want(ext[RETAINED].base, ext[RETAINED].base + 1);
		check_blocks("size overflow", r.heap);
		for (size_t i = 0; i < r.heap->nregions; i++)
			CHECKF(r.heap->regions[i].start < r.heap->regions[i].end &&
			       r.heap->regions[i].end <= 1ull << 48,
			       "size overflow: region %#llx-%#llx",
			       (unsigned long long)r.heap->regions[i].start,
			       (unsigned long long)r.heap->regions[i].end);
	}
	done(&r);

	/* a thread cache bin whose count is not a whole number of pointers:
	 * skipped, so its regions are the program's */
	build_mock(&m);
	uint16_t odd = (uint16_t)(STACK3 + 12);
	mock_write(&m, bin(3) + L->cache_bin_low_bits_empty_off, &odd, 2);
	walk(&r, &m, &k);
	CHECK(!r.err);
	if (!r.err && warned("ncached", &r, "bin 3 claims 1 cached pointers")) {
		expect_all();
		for (int i = 0; i < 3; i++)
			want_at(ext[SLAB48].base + 48 * cached48[i])->where = W_SMALL;
		check_blocks("ncached", r.heap);
	}
	done(&r);

	/* a bin whose stack is outside the core */
	build_mock(&m);
	mock_put64(&m, bin(37) + L->cache_bin_stack_head_off, OUTSIDE);
	uint16_t e37 = (uint16_t)(OUTSIDE + 16);
	mock_write(&m, bin(37) + L->cache_bin_low_bits_empty_off, &e37, 2);
	walk(&r, &m, &k);
	CHECK(!r.err);
	if (!r.err && warned("stack outside", &r, "bin 37's stack is not in the core")) {
		expect_all();
		want_at(ext[CACHED].base + 0x80)->where = W_LARGE;
		check_blocks("stack outside", r.heap);
	}
	done(&r);

	/* a size table (the DWARF path reads it from the core) with a class
	 * of 0 bytes: no slab of that class is walked */
	build_mock(&m);
	jemalloc_sizes(sizes);
	sizes[3] = 0;
	k.sizes = sizes;
	walk(&r, &m, &k);
	k.sizes = NULL;
	if (warned("class of 0 bytes", &r, "1 extents are unreadable")) {
		expect_all();
		drop_want(ext[SLAB48].base, ext[SLAB48].base + 3 * PAGE);
		check_blocks("class of 0 bytes", r.heap);
	}
	done(&r);

	/* arena 1's slot holds an arena that says it is arena 5: its
	 * extents belong to no arena */
	build_mock(&m);
	uint32_t five = 5;
	mock_write(&m, ARENA1 + L->arena_ind_off, &five, 4);
	walk(&r, &m, &k);
	CHECK(!r.err);
	if (!r.err && warned("arena index", &r, "does not say it is arena 1")) {
		CHECK(has_warning(&r.log, "2 extents name an arena"));
		expect_all();
		for (size_t i = 0; i < nwant; i++)
			if (want[i].arena == 1)
				want[i].arena = HS_ARENA_NONE;
		check_blocks("arena index", r.heap);
	}
	done(&r);

	/* arena 0's descriptor ring leading into a loop that misses its head */
	build_mock(&m);
	uint64_t desc = SLOW + L->tcache_slow_descriptor_off;
	uint64_t desc2 = SLOW2 + L->tcache_slow_descriptor_off;
	mock_put64(&m, desc + L->descriptor_next_off, desc2);
	mock_put64(&m, desc2 + L->descriptor_next_off, desc2);
	walk(&r, &m, &k);
	CHECK(!r.err);
	if (!r.err && warned("ring loop", &r, "(it loops)")) {
		expect_all();
		check_blocks("ring loop", r.heap);
	}
	done(&r);
}

int main(void)
{
	L = layout_find();
	CHECK(L != NULL);
	if (!L)
		return check_finish();
	/* the offsets the heap is laid out at by hand assume these */
	CHECK(layout_fits());
	test_good();
	test_hostile();
	return check_finish();
}
